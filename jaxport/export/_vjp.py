"""Exporting the VJP of an exported function, built lazily on first ``vjp()``.

The VJP function takes the flat primal inputs followed by one cotangent per
flat primal output (float0 for integer outputs) and returns one cotangent per
flat primal input. Its input shardings are the primal input then output
shardings; its output shardings are the primal input shardings. It is built
from the primal jaxpr with public jax APIs and exported with the same
``export`` function, platforms and disabled checks as the primal.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
from jax.extend import core as jex_core

from jaxport.export import _shardings


def vjp_getter(jaxpr, *, export_fn: Callable, mesh) -> Callable[[Any], Any]:
  """A ``_get_vjp`` for a record lowered from ``jaxpr``.

  ``export_fn`` is jaxport's ``export``, passed in so this module does not
  import the one that imports it. ``mesh`` is the export's abstract mesh under
  Shardy, or None.
  """
  def get_vjp(primal):
    fun_vjp, vjp_in_avals = vjp_function(jaxpr, primal, mesh=mesh)
    return export_fn(fun_vjp, platforms=primal.platforms,
                     disabled_checks=primal.disabled_safety_checks)(*vjp_in_avals)
  return get_vjp


def vjp_function(jaxpr, primal, *, mesh) -> tuple[Callable, list[Any]]:
  """The jitted VJP of ``jaxpr`` with ``primal``'s shardings, and its input avals."""
  primal_fun = jex_core.jaxpr_as_fun(jaxpr)
  nr_primals = len(primal.in_avals)

  # Named so that the export's fun_name matches jax's for VJP exports.
  def fun_vjp_jax(*args_and_out_cts_flat_jax):
    primals, out_cts = args_and_out_cts_flat_jax[:nr_primals], args_and_out_cts_flat_jax[nr_primals:]
    _, pullback = jax.vjp(primal_fun, *primals)
    return pullback(list(out_cts))

  vjp_in_avals = [*primal.in_avals, *(a.to_tangent_aval() for a in primal.out_avals)]
  on_mesh = lambda s: _shardings.named_sharding_on_mesh(s, mesh)
  in_shardings = tuple(on_mesh(s) for s in itertools.chain(primal._in_named_shardings,
                                                           primal._out_named_shardings))
  out_shardings = tuple(on_mesh(s) for s in primal._in_named_shardings)
  return jax.jit(fun_vjp_jax, in_shardings=in_shardings,
                 out_shardings=out_shardings), vjp_in_avals
