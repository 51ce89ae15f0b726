"""T.tile: the AIV's vector tile ops (`T.tile.add(dst, a, b)`, `T.tile.exp(dst, src)`, ...),
one wrapper per `tile.*` op of the registry (generated; see _ops.py)."""

from . import _ops

for _name in _ops.names_with_prefix("tile."):
    globals()[_name[len("tile."):]] = _ops.wrapper(_name)
del _name
