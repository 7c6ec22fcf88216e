"""vmap of convjit's ops.  A vmapped axis of the activations is more batch: it is folded into N
(moved next to it and merged, a free reshape where N leads) and split off the results, so one
call serves the whole vmap.  Where that would change the op (a parameter batched, a gradient
or statistic summed over N, a training BatchNorm's statistics), the calls run one per element
(jax.lax.map)."""

import jax
import jax.numpy as jnp


def _fold(a, batched, size, n_axis):
    if not batched:
        a = jnp.broadcast_to(a, (size,) + a.shape)
    a = jnp.moveaxis(a, 0, n_axis)  # the vmapped axis just before N
    return a.reshape(a.shape[:n_axis] + (a.shape[n_axis] * a.shape[n_axis + 1],) +
                     a.shape[n_axis + 2:])


def _unfold(a, size, n_axis):
    a = a.reshape(a.shape[:n_axis] + (size, a.shape[n_axis] // size) + a.shape[n_axis + 1:])
    return jnp.moveaxis(a, n_axis, 0)


def batched_over_n(op, n_axes, out_n_axes):
    """`op(*arrays)` -> tuple of arrays, with a vmap rule.  n_axes: each argument's N axis, or
    None for a parameter; out_n_axes: each result's N axis, or None (then vmap runs per
    element)."""
    wrapped = jax.custom_batching.custom_vmap(op)

    @wrapped.def_vmap
    def rule(size, in_batched, *args):
        foldable = all(n is not None for n in out_n_axes) and not any(
            b and n is None for b, n in zip(in_batched, n_axes))
        if not foldable:
            return _per_element(op, size, in_batched, args), (True,) * len(out_n_axes)
        folded = [a if n is None else _fold(a, b, size, n)
                  for a, b, n in zip(args, in_batched, n_axes)]
        outs = op(*folded)
        return tuple(_unfold(o, size, n) for o, n in zip(outs, out_n_axes)), \
            (True,) * len(out_n_axes)

    return wrapped


def _per_element(op, size, in_batched, args):
    batched = tuple(a for a, b in zip(args, in_batched) if b)

    def one(slices):
        it = iter(slices)
        return op(*[next(it) if b else a for a, b in zip(args, in_batched)])

    return tuple(jax.lax.map(one, batched))
