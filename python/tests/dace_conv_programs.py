"""Direct 2D convolutions written as DaCe programs, one per direction, in the argument order
of LBANN's DaCe ABI: an SDFG named `conv` whose arguments sort (as DaCe's arglist does) as
p0, p1, p2, then B when the batch is left symbolic, then alpha and beta.  Slots: fwd (w, x, y),
bwddata (w, dx, dy), bwdfilt (dw, x, dy).  Each writes alpha * op + beta * out.

Every size is a DaCe symbol that `build` specialises: DaCe 1.0.2's frontend turns literal
loop bounds into numpy scalars whose numpy-2 repr (`np.int64(3)`) sympy cannot parse, while
symbols reach the generated C++ as constants."""

import dace

B, C, H, W, K, R, S, OH, OW = (dace.symbol(n) for n in "B C H W K R S OH OW".split())
SH, SW, PH, PW, DH, DW = (dace.symbol(n) for n in "SH SW PH PW DH DW".split())

# pylint: disable=unsubscriptable-object  (DaCe's annotations)


@dace.program
def conv_fwd(p0: dace.float32[K, C, R, S], p1: dace.float32[B, C, H, W],
             p2: dace.float32[B, K, OH, OW], alpha: dace.float32, beta: dace.float32):
    for n, k, i, j in dace.map[0:B, 0:K, 0:OH, 0:OW]:
        acc = dace.float32(0)
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    h = i * SH + r * DH - PH
                    v = j * SW + s * DW - PW
                    if h >= 0 and h < H and v >= 0 and v < W:
                        acc = acc + p1[n, c, h, v] * p0[k, c, r, s]
        p2[n, k, i, j] = alpha * acc + beta * p2[n, k, i, j]


@dace.program
def conv_bwddata(p0: dace.float32[K, C, R, S], p1: dace.float32[B, C, H, W],
                 p2: dace.float32[B, K, OH, OW], alpha: dace.float32, beta: dace.float32):
    for n, c, h, v in dace.map[0:B, 0:C, 0:H, 0:W]:
        acc = dace.float32(0)
        for k in range(K):
            for r in range(R):
                for s in range(S):
                    a = h + PH - r * DH
                    b = v + PW - s * DW
                    if (a >= 0 and b >= 0 and a % SH == 0 and b % SW == 0 and a // SH < OH
                            and b // SW < OW):
                        acc = acc + p2[n, k, a // SH, b // SW] * p0[k, c, r, s]
        p1[n, c, h, v] = alpha * acc + beta * p1[n, c, h, v]


@dace.program
def conv_bwdfilt(p0: dace.float32[K, C, R, S], p1: dace.float32[B, C, H, W],
                 p2: dace.float32[B, K, OH, OW], alpha: dace.float32, beta: dace.float32):
    for k, c, r, s in dace.map[0:K, 0:C, 0:R, 0:S]:
        acc = dace.float32(0)
        for n in range(B):
            for i in range(OH):
                for j in range(OW):
                    h = i * SH + r * DH - PH
                    v = j * SW + s * DW - PW
                    if h >= 0 and h < H and v >= 0 and v < W:
                        acc = acc + p1[n, c, h, v] * p2[n, k, i, j]
        p0[k, c, r, s] = alpha * acc + beta * p0[k, c, r, s]


PROGRAMS = {"fwd": conv_fwd, "bwddata": conv_bwddata, "bwdfilt": conv_bwdfilt}


def build(direction, sizes, folder, symbolic_batch=False):
    """Compiles `direction`'s program for `sizes` (every symbol above; B is left free when
    symbolic_batch) into `folder` with DaCe's CPU code generator; returns the library's path."""
    sdfg = PROGRAMS[direction].to_sdfg()
    sdfg.name = "conv"  # the symbols DiHydrogen looks up: __dace_init_conv, __program_conv
    fixed = {name: value for name, value in sizes.items() if not (symbolic_batch and name == "B")}
    sdfg.specialize(fixed)
    sdfg.build_folder = str(folder)
    return sdfg.compile().filename
