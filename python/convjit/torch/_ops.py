"""The differentiable ops the functions call: _autograd's Functions over
the torch.library custom ops where torch has them (2.4 or newer), else
over the plain kernels."""

from . import _autograd, _custom_ops
from . import _kernels as K
from . import _norm_kernels as NK
from ._norm_autograd import make_norm_functions

REGISTERED_AS_CUSTOM_OPS = _custom_ops.AVAILABLE
FUNCTIONS = _custom_ops.FUNCTIONS if REGISTERED_AS_CUSTOM_OPS else \
    _autograd.make_functions(K.PLAIN_OPS, K.PLAIN_OPS)
conv = FUNCTIONS.conv
conv_transpose = FUNCTIONS.conv_transpose
pool = FUNCTIONS.pool
NORM_FUNCTIONS = _custom_ops.NORM_FUNCTIONS if REGISTERED_AS_CUSTOM_OPS else \
    make_norm_functions(NK)
batch_norm = NORM_FUNCTIONS.BatchNorm.apply
resize = NORM_FUNCTIONS.Resize.apply
