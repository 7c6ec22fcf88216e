"""The core operations on any DLPack arrays (numpy, torch, cupy, jax), on
the host or a CUDA device.  Outputs are arrays the caller allocates (see
conv_output_shape and pool_output_shape) and convjit writes in place, with
cuDNN's scaling: out = alpha * op(...) + beta * out.

Spatial parameters take an int (every spatial dim), or one value per
spatial dim; padding also takes one (begin, end) pair per spatial dim.
"""

import ctypes as C

from . import _library
from ._dlpack import Tensor, TensorLayout
from .errors import InvalidArgumentError, check

_lib = _library.lib
_POOL_MODES = {"max": _library.POOL_MAX, "avg": _library.POOL_AVG_EXCLUDE_PAD,
               "avg_include_pad": _library.POOL_AVG_INCLUDE_PAD}


def _spatial(value, count, name):
    if isinstance(value, int):
        return (value,) * count
    values = tuple(value)
    if len(values) != count or not all(isinstance(v, int) for v in values):
        raise InvalidArgumentError(f"{name} = {value!r}: give an int or {count} ints, one per "
                                   "spatial dim")
    return values


def _padding(value, count):
    """(begins, ends) from an int, one int per dim, or one (begin, end) pair per dim."""
    if not isinstance(value, int) and len(tuple(value)) == count and all(
            not isinstance(v, int) for v in value):
        pairs = [tuple(v) for v in value]
        if not all(len(p) == 2 and all(isinstance(e, int) for e in p) for p in pairs):
            raise InvalidArgumentError(f"padding = {value!r}: give (begin, end) pairs of ints")
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    symmetric = _spatial(value, count, "padding")
    return symmetric, symmetric


def conv_params(spatial_dims, stride=1, padding=0, dilation=1, groups=1):
    p = _library.ConvParams()
    p.spatial_dims, p.groups = spatial_dims, groups
    begins, ends = _padding(padding, spatial_dims)
    for i, (s, b, e, d) in enumerate(zip(_spatial(stride, spatial_dims, "stride"), begins, ends,
                                         _spatial(dilation, spatial_dims, "dilation"))):
        p.stride[i], p.pad_begin[i], p.pad_end[i], p.dilation[i] = s, b, e, d
    return p


def pool_params(spatial_dims, mode, window, stride=None, padding=0, dilation=1):
    if mode not in _POOL_MODES:
        raise InvalidArgumentError(f"mode = {mode!r}: give one of {', '.join(_POOL_MODES)}")
    p = _library.PoolParams()
    p.spatial_dims, p.mode = spatial_dims, _POOL_MODES[mode]
    window = _spatial(window, spatial_dims, "window")
    stride = window if stride is None else _spatial(stride, spatial_dims, "stride")
    begins, ends = _padding(padding, spatial_dims)
    for i, (k, s, b, e, d) in enumerate(zip(window, stride, begins, ends,
                                            _spatial(dilation, spatial_dims, "dilation"))):
        p.window[i], p.stride[i], p.pad_begin[i], p.pad_end[i], p.dilation[i] = k, s, b, e, d
    return p


def _exec(tensors, stream, w_version=0):
    """The device all of `tensors` live on, the call's stream and the filters' version
    (convjit_exec_t.w_version)."""
    if isinstance(w_version, bool) or not isinstance(w_version, int) or \
            not 0 <= w_version < 2 ** 64:
        raise InvalidArgumentError(f"w_version = {w_version!r}: give an int from 0 (w may have "
                                   "changed) to 2**64 - 1")
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        where = ", ".join(f"{t.name} on {'cuda:%d' % t.device[1] if t.device[0] else 'host'}"
                          for t in tensors)
        raise InvalidArgumentError(f"the operands are on different devices ({where}); move them "
                                   "to one")
    kind, ordinal = devices.pop()
    e = _library.Exec()
    e.device.kind, e.device.ordinal = kind, ordinal
    e.stream = stream if kind == _library.DEVICE_CUDA else None
    e.w_version = w_version
    return e


def _view(array, name, stream):
    return None if array is None else Tensor(array, name, stream)


def _pointer(tensor):
    return None if tensor is None else C.c_void_p(tensor.pointer)


def _desc(tensor):
    return None if tensor is None else C.byref(tensor.desc())


def _named(value, name):
    """A descriptor name's operand: an array, or a TensorLayout as it is."""
    return value if isinstance(value, TensorLayout) else Tensor(value, name)


def _spatial_dims(x):
    return len(x.shape) - 2


def conv_output_shape(x_shape, w_shape, stride=1, padding=0, dilation=1, groups=1):
    """y's shape (N, K, spatial...) for x and w of these shapes."""
    count = len(x_shape) - 2
    params = conv_params(count, stride, padding, dilation, groups)
    x, w = _library.TensorDesc(), _library.TensorDesc()
    for d, shape in ((x, x_shape), (w, w_shape)):
        d.dtype, d.rank = 0, len(shape)
        for i, size in enumerate(shape):
            d.dims[i], d.strides[i] = size, 1
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_conv_output_dims(C.byref(params), C.byref(x), C.byref(w), out))
    return tuple(out[i] for i in range(len(x_shape)))


def pool_output_shape(x_shape, window, stride=None, padding=0, dilation=1, ceil_mode=False,
                      mode="max"):
    """y's shape for x of this shape, floor or ceil rounded."""
    params = pool_params(len(x_shape) - 2, mode, window, stride, padding, dilation)
    x = _library.TensorDesc()
    x.dtype, x.rank = 0, len(x_shape)
    for i, size in enumerate(x_shape):
        x.dims[i], x.strides[i] = size, 1
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_pool_output_dims(C.byref(params), C.byref(x), int(ceil_mode), out))
    return tuple(out[i] for i in range(len(x_shape)))


def conv_forward(x, w, y, *, stride=1, padding=0, dilation=1, groups=1, alpha=1.0, beta=0.0,
                 activation=None, bias=None, residual=None, stream=None, w_version=0):
    """y = alpha * conv(x, w) + beta * y; with an activation, a bias or a residual, the fused
    y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y.

    w_version: nonzero promises that w holds what it held at the last call with this w and
    this version, so a kernel that copies w into another order may reuse its copy
    (convjit_exec_t.w_version); 0 copies every call."""
    tx, tw, ty = Tensor(x, "x", stream), Tensor(w, "w", stream), Tensor(y, "y", stream)
    tb = None if bias is None else _vector(bias, "bias", ty, stream)
    tr = _view(residual, "residual", stream)
    params = conv_params(_spatial_dims(tx), stride, padding, dilation, groups)
    e = _exec([t for t in (tx, tw, ty, tb, tr) if t is not None], stream, w_version)
    if activation is None and bias is None and residual is None:
        check(_lib.convjit_conv_forward(C.byref(params), _desc(tx), _pointer(tx), _desc(tw),
                                        _pointer(tw), _desc(ty), _pointer(ty), alpha, beta,
                                        C.byref(e)))
        return y
    epilogue = _epilogue(activation, tb, tr)
    check(_lib.convjit_conv_forward_fused(C.byref(params), _desc(tx), _pointer(tx), _desc(tw),
                                          _pointer(tw), C.byref(epilogue), _desc(ty),
                                          _pointer(ty), alpha, beta, C.byref(e)))
    return y


def _epilogue(activation, bias, residual):
    activation = activation or "identity"
    if activation not in _library.ACTIVATIONS:
        raise InvalidArgumentError(f"activation = {activation!r}: give one of "
                                   f"{', '.join(_library.ACTIVATIONS)}")
    e = _library.Epilogue()
    e.activation = _library.ACTIVATIONS[activation]
    e.bias = None if bias is None else bias.pointer
    e.residual = None if residual is None else residual.pointer
    return e


def conv_backward_data(dy, w, dx, *, stride=1, padding=0, dilation=1, groups=1, alpha=1.0,
                       beta=0.0, stream=None, w_version=0):
    """dx = alpha * conv_transpose(dy, w) + beta * dx.  w_version as conv_forward's."""
    tdy, tw, tdx = Tensor(dy, "dy", stream), Tensor(w, "w", stream), Tensor(dx, "dx", stream)
    params = conv_params(_spatial_dims(tdx), stride, padding, dilation, groups)
    e = _exec([tdy, tw, tdx], stream, w_version)
    check(_lib.convjit_conv_backward_data(C.byref(params), _desc(tdy), _pointer(tdy), _desc(tw),
                                          _pointer(tw), _desc(tdx), _pointer(tdx), alpha, beta,
                                          C.byref(e)))
    return dx


def conv_backward_filter(x, dy, dw, *, stride=1, padding=0, dilation=1, groups=1, alpha=1.0,
                         beta=0.0, stream=None):
    """dw = alpha * correlate(x, dy) + beta * dw."""
    tx, tdy, tdw = Tensor(x, "x", stream), Tensor(dy, "dy", stream), Tensor(dw, "dw", stream)
    params = conv_params(_spatial_dims(tx), stride, padding, dilation, groups)
    e = _exec([tx, tdy, tdw], stream)
    check(_lib.convjit_conv_backward_filter(C.byref(params), _desc(tx), _pointer(tx),
                                            _desc(tdy), _pointer(tdy), _desc(tdw), _pointer(tdw),
                                            alpha, beta, C.byref(e)))
    return dw


def bias_grad(dy, db, *, alpha=1.0, beta=0.0, stream=None):
    """db[k] = alpha * (dy summed over batch and pixels)[k] + beta * db[k]; db holds K
    contiguous elements of dy's dtype (any DLPack array of that size)."""
    tdy = Tensor(dy, "dy", stream)
    e = _exec([tdy], stream)
    check(_lib.convjit_conv_backward_bias(_desc(tdy), _pointer(tdy),
                                          _pointer(_vector(db, "db", tdy, stream)), alpha, beta,
                                          C.byref(e)))
    return db


def _vector(array, name, like, stream):
    """A contiguous array of K elements (K: like's channels) in like's dtype."""
    t = Tensor(array, name, stream, vector=True)
    if t.count != like.shape[1]:
        raise InvalidArgumentError(f"{name} has {t.count} elements; it needs K = {like.shape[1]}, "
                                   "one per filter")
    if t.dtype != like.dtype:
        raise InvalidArgumentError(f"{name} is {t.dtype}; it needs {like.dtype}, {like.name}'s")
    return t


def conv_backward(x, w, dy, *, dx=None, dw=None, db=None, stride=1, padding=0, dilation=1,
                  groups=1, stream=None, w_version=0):
    """PyTorch's convolution_backward: overwrites exactly the given ones of dx, dw and db.
    x may be None when dw is not asked for, w when dx is not.  w_version as conv_forward's."""
    tensors = {"x": _view(x, "x", stream), "w": _view(w, "w", stream),
               "dy": Tensor(dy, "dy", stream), "dx": _view(dx, "dx", stream),
               "dw": _view(dw, "dw", stream)}
    shape_of = tensors["x"] or tensors["dx"]
    if shape_of is None:
        raise InvalidArgumentError("conv_backward needs x or dx for the input's shape")
    mask = ((_library.GRAD_INPUT if dx is not None else 0) |
            (_library.GRAD_WEIGHT if dw is not None else 0) |
            (_library.GRAD_BIAS if db is not None else 0))
    params = conv_params(_spatial_dims(shape_of), stride, padding, dilation, groups)
    e = _exec([t for t in tensors.values() if t is not None], stream, w_version)
    x_desc = tensors["x"].desc() if tensors["x"] else tensors["dx"].desc()
    w_desc = tensors["w"].desc() if tensors["w"] else tensors["dw"].desc()
    db_pointer = None if db is None else _pointer(_vector(db, "db", tensors["dy"], stream))
    check(_lib.convjit_conv_backward(
        C.byref(params), C.byref(x_desc), _pointer(tensors["x"]), C.byref(w_desc),
        _pointer(tensors["w"]), _desc(tensors["dy"]), _pointer(tensors["dy"]), mask,
        _pointer(tensors["dx"]), _pointer(tensors["dw"]), db_pointer, C.byref(e)))
    return dx, dw, db


def pool_forward(x, y, *, window, mode="max", stride=None, padding=0, dilation=1, alpha=1.0,
                 beta=0.0, stream=None):
    """y = alpha * pool(x) + beta * y; ceil mode shows through y's shape."""
    tx, ty = Tensor(x, "x", stream), Tensor(y, "y", stream)
    params = pool_params(_spatial_dims(tx), mode, window, stride, padding, dilation)
    e = _exec([tx, ty], stream)
    check(_lib.convjit_pool_forward(C.byref(params), _desc(tx), _pointer(tx), _desc(ty),
                                    _pointer(ty), alpha, beta, C.byref(e)))
    return y


def pool_backward(x, dy, dx, *, window, mode="max", stride=None, padding=0, dilation=1,
                  alpha=1.0, beta=0.0, stream=None):
    """dx = alpha * pool_bwd(x, dy) + beta * dx; dx has x's shape and strides, and x may be
    None for average pooling (then dx gives the shape)."""
    tdy, tdx = Tensor(dy, "dy", stream), Tensor(dx, "dx", stream)
    tx = _view(x, "x", stream)
    params = pool_params(_spatial_dims(tdx), mode, window, stride, padding, dilation)
    e = _exec([t for t in (tx, tdy, tdx) if t is not None], stream)
    check(_lib.convjit_pool_backward(C.byref(params), C.byref((tx or tdx).desc()), _pointer(tx),
                                     _desc(tdy), _pointer(tdy), _pointer(tdx), alpha, beta,
                                     C.byref(e)))
    return dx


def _query_name(call):
    required = C.c_size_t(0)
    check(call(None, 0, C.byref(required)))
    buf = C.create_string_buffer(required.value)
    check(call(buf, required.value, C.byref(required)))
    return buf.value.decode()


_CONV_DIRECTIONS = {"fwd": _library.CONV_FWD, "bwddata": _library.CONV_BWDDATA,
                    "bwdfilt": _library.CONV_BWDFILT}


def conv_descriptor_name(x, w, y, *, direction="fwd", stride=1, padding=0, dilation=1, groups=1,
                         activation=None, bias=None, residual=None, symbolic_batch=False):
    """The descriptor name (LBANN's grammar, see the README) of a conv on arrays in its slots:
    (x, w, y) for fwd, (dx, w, dy) for bwddata, (x, dw, dy) for bwdfilt.  A fwd with an
    activation, bias or residual is named with its fused epilogue."""
    if direction not in _CONV_DIRECTIONS:
        raise InvalidArgumentError(f"direction = {direction!r}: give fwd, bwddata or bwdfilt")
    tx, tw, ty = _named(x, "x"), _named(w, "w"), _named(y, "y")
    params = conv_params(_spatial_dims(tx), stride, padding, dilation, groups)
    if activation is None and bias is None and residual is None:
        return _query_name(lambda buf, size, required: _lib.convjit_conv_descriptor_name(
            C.byref(params), _CONV_DIRECTIONS[direction], _desc(tx), _desc(tw), _desc(ty),
            int(symbolic_batch), buf, size, required))
    if direction != "fwd":
        raise InvalidArgumentError("a fused epilogue belongs to direction fwd only")
    # Only whether bias and residual are given enters the name, not their contents.
    epilogue = _epilogue(activation, None, None)
    epilogue.bias = None if bias is None else 1
    epilogue.residual = None if residual is None else 1
    return _query_name(lambda buf, size, required: _lib.convjit_conv_fused_descriptor_name(
        C.byref(params), _desc(tx), _desc(tw), C.byref(epilogue), _desc(ty),
        int(symbolic_batch), buf, size, required))


def pool_descriptor_name(x, y, *, window, direction="fwd", mode="max", stride=None, padding=0,
                         dilation=1, symbolic_batch=False):
    """The descriptor name of a pool: (x, y) for fwd, (x, dy) for bwd."""
    if direction not in ("fwd", "bwd"):
        raise InvalidArgumentError(f"direction = {direction!r}: give fwd or bwd")
    tx, ty = _named(x, "x"), _named(y, "y")
    params = pool_params(_spatial_dims(tx), mode, window, stride, padding, dilation)
    kind = _library.POOL_FWD if direction == "fwd" else _library.POOL_BWD
    return _query_name(lambda buf, size, required: _lib.convjit_pool_descriptor_name(
        C.byref(params), kind, _desc(tx), _desc(ty), int(symbolic_batch), buf, size, required))


def bias_grad_descriptor_name(dy, *, symbolic_batch=False):
    tdy = _named(dy, "dy")
    return _query_name(lambda buf, size, required: _lib.convjit_bias_grad_descriptor_name(
        _desc(tdy), int(symbolic_batch), buf, size, required))


# ---- batch normalisation ---------------------------------------------------------------------

def batch_norm_params(epsilon=1e-5, momentum=0.1, onnx_running_stats=False, activation=None):
    p = _library.BatchNormParams()
    activation = activation or "identity"
    if activation not in ("identity", "relu", "silu"):
        raise InvalidArgumentError(f"activation = {activation!r}: a batchnorm fuses relu or silu")
    p.epsilon, p.momentum = float(epsilon), float(momentum)
    p.onnx_running_stats, p.activation = int(bool(onnx_running_stats)), \
        _library.ACTIVATIONS[activation]
    return p


def _channels(array, name, x, stream):
    """A per-channel vector of a batchnorm: C contiguous elements, float32 (float64 for float64
    data), or None."""
    if array is None:
        return None
    t = Tensor(array, name, stream, vector=True)
    wanted = "float64" if x.dtype == "float64" else "float32"
    if t.count != x.shape[1]:
        raise InvalidArgumentError(f"{name} has {t.count} elements; it needs C = {x.shape[1]}, "
                                   f"one per channel of {x.name}")
    if t.dtype != wanted:
        raise InvalidArgumentError(f"{name} is {t.dtype}; batchnorm statistics and parameters "
                                   f"are {wanted} for {x.dtype} data")
    return t


def batch_norm_forward_training(x, y, *, scale=None, shift=None, running_mean=None,
                                running_var=None, saved_mean=None, saved_invstd=None,
                                epsilon=1e-5, momentum=0.1, onnx_running_stats=False,
                                activation=None, alpha=1.0, beta=0.0, stream=None):
    """y = alpha * act(scale * (x - mean) * invstd + shift) + beta * y over the batch's
    statistics; writes saved_mean and saved_invstd and updates running_mean and running_var
    (PyTorch's momentum and unbiased variance, or ONNX's with onnx_running_stats) where
    given.  The per-channel arrays hold C float32 elements (float64 for float64 data)."""
    tx, ty = Tensor(x, "x", stream), Tensor(y, "y", stream)
    ch = {name: _channels(a, name, tx, stream) for name, a in (
        ("scale", scale), ("shift", shift), ("running_mean", running_mean),
        ("running_var", running_var), ("saved_mean", saved_mean),
        ("saved_invstd", saved_invstd))}
    params = batch_norm_params(epsilon, momentum, onnx_running_stats, activation)
    e = _exec([t for t in (tx, ty, *ch.values()) if t is not None], stream)
    check(_lib.convjit_batchnorm_forward_training(
        C.byref(params), _desc(tx), _pointer(tx), _pointer(ch["scale"]), _pointer(ch["shift"]),
        _desc(ty), _pointer(ty), _pointer(ch["running_mean"]), _pointer(ch["running_var"]),
        _pointer(ch["saved_mean"]), _pointer(ch["saved_invstd"]), alpha, beta, C.byref(e)))
    return y


def batch_norm_forward_inference(x, y, *, running_mean, running_var, scale=None, shift=None,
                                 epsilon=1e-5, activation=None, alpha=1.0, beta=0.0,
                                 stream=None):
    """y = alpha * act(scale * (x - running_mean) / sqrt(running_var + epsilon) + shift)
    + beta * y."""
    tx, ty = Tensor(x, "x", stream), Tensor(y, "y", stream)
    ch = {name: _channels(a, name, tx, stream) for name, a in (
        ("scale", scale), ("shift", shift), ("running_mean", running_mean),
        ("running_var", running_var))}
    params = batch_norm_params(epsilon, 0.0, False, activation)
    e = _exec([t for t in (tx, ty, *ch.values()) if t is not None], stream)
    check(_lib.convjit_batchnorm_forward_inference(
        C.byref(params), _desc(tx), _pointer(tx), _pointer(ch["scale"]), _pointer(ch["shift"]),
        _pointer(ch["running_mean"]), _pointer(ch["running_var"]), _desc(ty), _pointer(ty),
        alpha, beta, C.byref(e)))
    return y


def batch_norm_backward(x, dy, *, mean, var_or_invstd, training=True, scale=None, shift=None,
                        dx=None, dscale=None, dshift=None, epsilon=1e-5, activation=None,
                        alpha=1.0, beta=0.0, stream=None):
    """PyTorch's native_batch_norm_backward: computes exactly the given ones of dx (x's shape
    and strides; alpha and beta scale it), dscale and dshift (overwritten).  With training,
    mean and var_or_invstd are the saved mean and invstd; without, the running mean and
    variance."""
    tx, tdy = Tensor(x, "x", stream), Tensor(dy, "dy", stream)
    tdx = _view(dx, "dx", stream)
    if tdx is not None and (tdx.shape, tdx.strides) != (tx.shape, tx.strides):
        raise InvalidArgumentError(f"dx has shape {tdx.shape} and strides {tdx.strides}; it needs "
                                   f"x's, {tx.shape} and {tx.strides}")
    ch = {name: _channels(a, name, tx, stream) for name, a in (
        ("scale", scale), ("shift", shift), ("mean", mean), ("var_or_invstd", var_or_invstd),
        ("dscale", dscale), ("dshift", dshift))}
    mask = ((_library.GRAD_INPUT if dx is not None else 0) |
            (_library.GRAD_WEIGHT if dscale is not None else 0) |
            (_library.GRAD_BIAS if dshift is not None else 0))
    params = batch_norm_params(epsilon, 0.0, False, activation)
    e = _exec([t for t in (tx, tdy, tdx, *ch.values()) if t is not None], stream)
    check(_lib.convjit_batchnorm_backward(
        C.byref(params), int(bool(training)), _desc(tx), _pointer(tx), _desc(tdy),
        _pointer(tdy), _pointer(ch["scale"]), _pointer(ch["shift"]), _pointer(ch["mean"]),
        _pointer(ch["var_or_invstd"]), mask, _pointer(tdx), _pointer(ch["dscale"]),
        _pointer(ch["dshift"]), alpha, beta, C.byref(e)))
    return dx, dscale, dshift


def batch_norm_descriptor_name(x, y, *, direction="fwd", training=True, scale=True, shift=True,
                               grads=("dx", "dscale", "dshift"), epsilon=1e-5,
                               onnx_running_stats=False, activation=None, symbolic_batch=False):
    """The descriptor name of a batchnorm on x and y (dy for bwd); scale and shift say whether
    those operands are given, grads which gradients a bwd computes."""
    if direction not in ("fwd", "bwd"):
        raise InvalidArgumentError(f"direction = {direction!r}: give fwd or bwd")
    unknown = set(grads) - {"dx", "dscale", "dshift"}
    if unknown:
        raise InvalidArgumentError(f"grads = {grads!r}: name dx, dscale or dshift")
    tx, ty = _named(x, "x"), _named(y, "y")
    params = batch_norm_params(epsilon, 0.1, onnx_running_stats, activation)
    flags = ((0 if scale else _library.BATCHNORM_NO_SCALE) |
             (0 if shift else _library.BATCHNORM_NO_SHIFT) |
             (0 if training else _library.BATCHNORM_INFERENCE))
    mask = 0 if direction == "fwd" else (
        (_library.GRAD_INPUT if "dx" in grads else 0) |
        (_library.GRAD_WEIGHT if "dscale" in grads else 0) |
        (_library.GRAD_BIAS if "dshift" in grads else 0))
    kind = _library.FORWARD if direction == "fwd" else _library.BACKWARD
    return _query_name(lambda buf, size, required: _lib.convjit_batchnorm_descriptor_name(
        C.byref(params), kind, flags, mask, _desc(tx), _desc(ty), int(symbolic_batch), buf,
        size, required))


# ---- resize ----------------------------------------------------------------------------------

def resize_params(spatial_dims, mode="nearest", coordinates=None, scale=None):
    """mode: nearest, nearest-ceil, nearest-round-prefer-floor, nearest-round-prefer-ceil or
    linear; coordinates: asymmetric, half-pixel, pytorch-half-pixel, align-corners or
    tf-half-pixel-for-nn (None: PyTorch's, asymmetric for nearest modes and half-pixel for
    linear); scale: out / in, a number or one per spatial dim (None, or 0 in a dim: from the
    sizes)."""
    if mode not in _library.RESIZE_MODES:
        raise InvalidArgumentError(f"mode = {mode!r}: give one of "
                                   f"{', '.join(_library.RESIZE_MODES)}")
    coordinates = coordinates or ("half-pixel" if mode == "linear" else "asymmetric")
    if coordinates not in _library.RESIZE_COORDINATES:
        raise InvalidArgumentError(f"coordinates = {coordinates!r}: give one of "
                                   f"{', '.join(_library.RESIZE_COORDINATES)}")
    p = _library.ResizeParams()
    p.spatial_dims = spatial_dims
    p.mode, p.coordinates = _library.RESIZE_MODES[mode], _library.RESIZE_COORDINATES[coordinates]
    if scale is not None:
        scales = (scale,) * spatial_dims if isinstance(scale, (int, float)) else tuple(scale)
        if len(scales) != spatial_dims:
            raise InvalidArgumentError(f"scale = {scale!r}: give a number or {spatial_dims}, one "
                                       "per spatial dim")
        for i, s in enumerate(scales):
            p.scale[i] = float(s)
    return p


def resize_output_shape(x_shape, scale):
    """y's shape: floor(in * scale) per spatial dim, as PyTorch and ONNX size it."""
    params = resize_params(len(x_shape) - 2, scale=scale)
    x = _library.TensorDesc()
    x.dtype, x.rank = 0, len(x_shape)
    for i, size in enumerate(x_shape):
        x.dims[i], x.strides[i] = size, 1
    out = (C.c_int64 * _library.MAX_RANK)()
    check(_lib.convjit_resize_output_dims(C.byref(params), C.byref(x), out))
    return tuple(out[i] for i in range(len(x_shape)))


def resize_forward(x, y, *, mode="nearest", coordinates=None, scale=None, alpha=1.0, beta=0.0,
                   stream=None):
    """y = alpha * resize(x) + beta * y; y's shape gives the output size."""
    tx, ty = Tensor(x, "x", stream), Tensor(y, "y", stream)
    params = resize_params(_spatial_dims(tx), mode, coordinates, scale)
    e = _exec([tx, ty], stream)
    check(_lib.convjit_resize_forward(C.byref(params), _desc(tx), _pointer(tx), _desc(ty),
                                      _pointer(ty), alpha, beta, C.byref(e)))
    return y


def resize_backward(dy, dx, *, mode="nearest", coordinates=None, scale=None, alpha=1.0,
                    beta=0.0, stream=None):
    """dx = alpha * resize_bwd(dy) + beta * dx, summed in a fixed order (deterministic)."""
    tdy, tdx = Tensor(dy, "dy", stream), Tensor(dx, "dx", stream)
    params = resize_params(_spatial_dims(tdx), mode, coordinates, scale)
    e = _exec([tdy, tdx], stream)
    check(_lib.convjit_resize_backward(C.byref(params), _desc(tdy), _pointer(tdy), _desc(tdx),
                                       _pointer(tdx), alpha, beta, C.byref(e)))
    return dx


def resize_descriptor_name(x, y, *, direction="fwd", mode="nearest", coordinates=None,
                           scale=None, symbolic_batch=False):
    """The descriptor name of a resize: (x, y) for fwd, (dx, dy) for bwd."""
    if direction not in ("fwd", "bwd"):
        raise InvalidArgumentError(f"direction = {direction!r}: give fwd or bwd")
    tx, ty = _named(x, "x"), _named(y, "y")
    params = resize_params(_spatial_dims(tx), mode, coordinates, scale)
    kind = _library.FORWARD if direction == "fwd" else _library.BACKWARD
    return _query_name(lambda buf, size, required: _lib.convjit_resize_descriptor_name(
        C.byref(params), kind, _desc(tx), _desc(ty), int(symbolic_batch), buf, size, required))
