"""convjit's errors: one class per C API status, each carrying the C API's
message, which names the field at fault and the fix."""

from . import _library


class Error(RuntimeError):
    """A convjit call failed; `status` is the C API's status code."""

    status = None


class InvalidArgumentError(Error, ValueError):
    status = 1


class UnsupportedError(Error):
    status = 2


class NotAvailableError(Error):
    status = 3


class OutOfMemoryError(Error, MemoryError):
    status = 4


class ExecutionError(Error):
    status = 5


class InternalError(Error):
    status = 6


_BY_STATUS = {cls.status: cls for cls in (InvalidArgumentError, UnsupportedError,
                                          NotAvailableError, OutOfMemoryError, ExecutionError,
                                          InternalError)}


def check(status):
    """Raises the Error subclass of a failed C API status, with its message."""
    if status == _library.SUCCESS:
        return
    message = _library.lib.convjit_last_error_message().decode("utf-8", "replace")
    raise _BY_STATUS.get(status, Error)(message)
