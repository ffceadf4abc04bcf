# SPDX-License-Identifier: Apache-2.0
"""hybridcache: cache policies and state algebra for hybrid LLM serving.

The functions and classes are the C++ library's (same names, same math, same errors), bound with
nanobind: NumPy arrays in and out (any array with the right shape converts; a copy is made only if
the dtype or layout differs), and the GIL released in long calls. Module-level functions also take
plain Python lists/tuples of numbers where they expect an array.

Errors: ``Error`` (a RuntimeError) is the base; ``InvalidArgument`` (also a ValueError) names the
bad argument and value (``StaleHandleError``, its subclass: a tree node id of an erased node);
``CapacityError``; ``NotFoundError`` (also a LookupError).
"""

import functools as _functools
import sys as _sys

import numpy as _np

from . import _hybridcache
from ._hybridcache import *  # noqa: F401,F403
from ._hybridcache import __version__, version  # noqa: F401
from ._hybridcache import segment, state, store, tree  # noqa: F401  (C++ namespaces as submodules)


def _as_array(value):
    """A list/tuple of numbers becomes a NumPy array; everything else passes unchanged."""
    if isinstance(value, (list, tuple)):
        try:
            arr = _np.asarray(value)
        except ValueError:  # ragged
            return value
        if arr.dtype.kind in "biuf":
            return arr
    return value


def _accept_sequences(fn):
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        return fn(*map(_as_array, args), **{k: _as_array(v) for k, v in kwargs.items()})

    return call


def _wrap_functions(module):
    for name in dir(module):
        obj = getattr(module, name)
        if not name.startswith("_") and type(obj).__name__ == "nb_func":
            setattr(module, name, _accept_sequences(obj))


_wrap_functions(_hybridcache)
for _name in dir(_hybridcache):
    if not _name.startswith("_") and type(getattr(_hybridcache, _name)).__name__ == "function":
        globals()[_name] = getattr(_hybridcache, _name)
# Submodules: `from hybridcache import state` and `import hybridcache.state` both work.
for _sub in (state, segment, store, tree):
    _wrap_functions(_sub)
    _sys.modules[f"{__name__}.{_sub.__name__.rsplit('.', 1)[-1]}"] = _sub
del _name, _sub
