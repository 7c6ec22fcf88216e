"""How far a tensor is from the f64 truth, for the model tests."""


def relative(a, b, floor=0.0):
    """||a - b|| / ||b||, b's norm floored (a gradient that is zero in exact
    arithmetic, a BN shift's say, is f32 noise on every side)."""
    return ((a.double() - b.double()).norm() / max(b.double().norm().item(), floor)).item()


def norm_floor(truths):
    """1e-3 of the largest norm among tensors of one kind."""
    return 1e-3 * max(t.double().norm().item() for t in truths)


def relative_all(tensors, truths):
    """relative() over a list of tensors taken as one vector: an error that
    chance puts on one small tensor (a max pool's near-tie routed the other
    way) weighs by that tensor's share, while a wrong formula in any tensor
    of weight still shows.  Raises on a list that is zero in f64 (the
    comparison would compare nothing)."""
    diff = sum((a.double() - b.double()).norm().item() ** 2 for a, b in zip(tensors, truths))
    total = sum(b.double().norm().item() ** 2 for b in truths)
    if total == 0:
        raise AssertionError("every tensor is zero in f64; the comparison would be vacuous")
    return (diff / total) ** 0.5
