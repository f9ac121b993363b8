"""``python -m _python_child_main FILE``: runs FILE's code as ``python -c`` runs its code, in
``__main__``, with ``sys.argv`` ``["-c"]`` (the child ``_python_child.run_python`` starts)."""

import sys

if __name__ == "__main__":
  with open(sys.argv[1]) as f:
    source = f.read()
  sys.argv = ["-c"]
  namespace = sys.modules["__main__"].__dict__
  for name in ("__file__", "__cached__"):
    namespace.pop(name, None)
  exec(compile(source, "<string>", "exec"), namespace)
