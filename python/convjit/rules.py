"""Rules (the README's "Rules"): which calls each rule selects, and the backend, variant or tuned
library it denies, forces or prefers for them.  The semantics live in the core; this sets them.

    convjit.rules("site.json", "mine.json")          # from now on, applied in order
    with convjit.rules({"version": 1, "rules": [...]}):
        model(x)                                     # only inside the block
    convjit.rules()                                  # no rules
    convjit.rules(None)                              # back to CONVJIT_RULES

A source is a rules file's path, a rules document (a dict), or a list of rule dicts.  Rules take
effect for calls first resolved afterwards; a bad source raises InvalidArgumentError naming the
file, the rule and the key, and the rules in force stay.
"""

import itertools
import json
import os
import tempfile

from . import _library
from .errors import check

_lib = _library.lib
_active = None  # the `rules` in force when set from Python; None: CONVJIT_RULES
_documents = itertools.count(1)


def _set(paths):
    check(_lib.convjit_set_rules_file(None if paths is None else os.fsencode(paths)))


class rules:  # noqa: N801 - a setter that is also a context manager, as torch.set_grad_enabled
    def __init__(self, *sources):
        global _active
        self._files = None  # a temporary directory holding the documents given as dicts
        paths = None if sources == (None,) else ":".join(self._path_of(s) for s in sources)
        _set(paths)
        self._paths, self._previous, _active = paths, _active, self

    def _path_of(self, source):
        if isinstance(source, (str, bytes, os.PathLike)):
            return os.fsdecode(source)
        if isinstance(source, list):
            source = {"version": 1, "rules": source}
        if not isinstance(source, dict):
            raise TypeError(f"a rules source is a path, a dict or a list of rules, not "
                            f"{type(source).__name__}")
        # Kept while this object lives: restoring it reads the file again.
        if self._files is None:
            self._files = tempfile.TemporaryDirectory(prefix="convjit-rules-")
        path = os.path.join(self._files.name, f"python-rules-{next(_documents)}.json")
        with open(path, "w") as out:
            json.dump(source, out)
        return path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _active
        _set(None if self._previous is None else self._previous._paths)
        _active = self._previous
        return False
