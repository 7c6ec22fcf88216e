"""How far a tensor is from the f64 truth, for the model tests."""


def relative(a, b, floor=0.0):
    """||a - b|| / ||b||, b's norm floored (a gradient that is zero in exact
    arithmetic, a BN shift's say, is f32 noise on every side)."""
    return ((a.double() - b.double()).norm() / max(b.double().norm().item(), floor)).item()


def norm_floor(truths):
    """1e-3 of the largest norm among tensors of one kind."""
    return 1e-3 * max(t.double().norm().item() for t in truths)
