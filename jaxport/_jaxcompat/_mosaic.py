"""Reading a Pallas TPU kernel's Mosaic payload (the body of a ``tpu_custom_call``).

The body is MLIR bytecode of jax's Mosaic dialects; jaxlib registers the ``tpu`` dialect only
on request, so the module is parsed in a context of jax's dialects with ``tpu`` added. Its
text is printed without source locations: a kernel installed elsewhere (another
site-packages) has the same text.
"""

from __future__ import annotations

from jax._src.interpreters import mlir
from jax._src.lib import tpu
from jax._src.lib.mlir import ir

from jaxport.errors import JaxportError


class MosaicPayloadError(JaxportError):
  """A Mosaic payload that this jaxlib cannot read."""


def mosaic_text(body: bytes) -> str:
  """The Mosaic module whose bytecode is ``body``, as text without source locations."""
  ctx = mlir.make_ir_context()
  tpu.register_dialect(ctx)
  with ctx:
    ctx.allow_unregistered_dialects = True
    try:
      module = ir.Module.parse(body)
    except Exception as e:  # noqa: BLE001  (MLIR raises its own error types)
      first = str(e).strip().splitlines()
      raise MosaicPayloadError(
          f"this jaxlib cannot read the Mosaic payload ({len(body)} bytes): "
          f"{first[0] if first else type(e).__name__}; read it with a jaxlib at least as new as "
          "the one that wrote it") from None
    return module.operation.get_asm(enable_debug_info=False)
