"""symbolic_args_specs broadcasts specs as a pytree prefix of the arguments, as jax does."""

import jax
import numpy as np
import pytest

import jaxport

ARGS = (np.zeros((3, 4), np.float32), {"a": np.zeros((3,), np.int32), "c": np.zeros((2, 3))})


@pytest.mark.parametrize("specs", ["b, ...", ("b, _", None), ("b, 4", {"a": "b", "c": "_, b"})])
def test_prefix_broadcast_matches_jax(specs):
  ours = jaxport.symbolic_args_specs(ARGS, specs)
  theirs = jax.export.symbolic_args_specs(ARGS, specs)
  assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
  for o, t in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
    assert tuple(str(d) for d in o.shape) == tuple(str(d) for d in t.shape)
    assert o.dtype == t.dtype


def test_specs_that_are_not_a_prefix_are_refused():
  with pytest.raises(jaxport.ShapeError, match="pytree prefix of args"):
    jaxport.symbolic_args_specs(ARGS, ("b, _", "b", "c"))
