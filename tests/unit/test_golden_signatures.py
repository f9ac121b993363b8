"""Custom-call signatures compared across jax releases: only what jax rewrites on its own, the
documentation links inside prose attributes, is set aside; the call itself is compared."""

from jaxport.golden._manifest import CustomCallSignature
from jaxport.golden._signatures import DOCUMENTATION_LINK, drift, normalized

MESSAGE = ('"Input shapes do not match the polymorphic shapes specification. Expected value >= '
           "{bound} for dimension variable 'b'. Please see {link}#shape-assertion-errors for "
           'more details."')
OLD_LINK = "https://jax.readthedocs.io/en/latest/export/shape_poly.html"
V011_LINK = "https://docs.jax.dev/en/latest/export/shape_poly.html"
V012_LINK = "https://docs.jax.dev/en/latest/501/shape-polymorphism.html"


def _assertion(link: str, bound: int = 1, operands=("tensor<i1>", "tensor<i32>")):
  return CustomCallSignature("shape_assertion", operands, (), {
      "error_message": MESSAGE.format(bound=bound, link=link), "has_side_effect": "true"})


def test_only_the_documentation_link_differing_is_no_change():
  for old in (OLD_LINK, V011_LINK):
    assert drift([_assertion(old)], [_assertion(V012_LINK)]) == []
  assert DOCUMENTATION_LINK in normalized(_assertion(V012_LINK)).attributes["error_message"]


def test_a_differing_predicate_or_operand_is_still_a_change():
  (change,) = drift([_assertion(V011_LINK, bound=1)], [_assertion(V012_LINK, bound=2)])
  assert change.target == "shape_assertion" and "error_message" in change.message
  (change,) = drift([_assertion(V011_LINK)],
                    [_assertion(V012_LINK, operands=("tensor<i1>", "tensor<i64>"))])
  assert "tensor<i64>" in change.message


def test_links_outside_prose_attributes_are_compared_as_they_are():
  a = CustomCallSignature("my_target", (), (), {"backend_config": f'"{V011_LINK}"'})
  b = CustomCallSignature("my_target", (), (), {"backend_config": f'"{V012_LINK}"'})
  assert normalized(a) == a
  assert len(drift([a], [b])) == 1
