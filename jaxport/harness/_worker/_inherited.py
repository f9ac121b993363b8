"""Read-only data every harness worker loads, loaded as this module is imported: the preloading
parent imports it with the worker's modules, so that a worker forked from that parent starts
with the data in hand instead of reading and checking it again (the release table, about 20 ms
of CPU a worker)."""

from jaxport.errors import JaxportError
from jaxport.releases import _table

try:
  _table.load()
except JaxportError:
  pass  # reported by the request that reads the table, as in a worker started fresh
