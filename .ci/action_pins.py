"""Every action a workflow uses is pinned to a commit, with the tag it stands for in a trailing
comment (``uses: actions/checkout@<40 hex>  # v4.4.0``).

  python3 .ci/action_pins.py FILE...           list the pins; exit 1 naming any action that is
                                               not pinned to a commit or names no tag
  python3 .ci/action_pins.py --check FILE...   also ask GitHub (git ls-remote, needs the
                                               network) for each tag's commit; exit 1 naming
                                               every pin whose commit is not its tag's

Standard library only: the nightly workflow runs it before installing anything.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
_PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+)(?:/[\w./-]+)?@(?P<commit>[0-9a-f]{40})")
_TAG_COMMENT = re.compile(r"^\s+#\s*(?P<tag>v?\d[\w.-]*)\s*$")


@dataclasses.dataclass(frozen=True)
class Pin:
  """One ``uses:`` line: the action's repository, its commit and the tag it stands for."""
  where: str
  repo: str
  commit: str
  tag: str


def read_pins(path: Path) -> tuple[list[Pin], list[str]]:
  """The pins of one workflow file, and a problem line for each ``uses:`` that is not one."""
  pins, problems = [], []
  for number, line in enumerate(path.read_text().splitlines(), 1):
    m = _USES.match(line)
    if m is None:
      continue
    ref, where = m.group("ref").strip("'\""), f"{path}:{number}"
    if ref.startswith(("./", "docker://")):
      continue
    pinned, tag = _PINNED.fullmatch(ref), _TAG_COMMENT.match(m.group("rest"))
    if pinned is None:
      problems.append(f"{where}: {ref} is not pinned to a commit; pin it as "
                      f"{ref.split('@')[0]}@<commit of the tag>  # <tag>")
    elif tag is None:
      problems.append(f"{where}: {ref} names no tag; add the tag it stands for as a trailing "
                      "comment (# v4.4.0)")
    else:
      pins.append(Pin(where, pinned.group("action"), pinned.group("commit"), tag.group("tag")))
  return pins, problems


def tag_commit(repo: str, tag: str) -> str | None:
  """The commit ``tag`` of github.com/``repo`` points at (peeled for an annotated tag)."""
  out = subprocess.run(["git", "ls-remote", f"https://github.com/{repo}",
                        f"refs/tags/{tag}", f"refs/tags/{tag}^{{}}"],
                       capture_output=True, text=True, timeout=120, check=True).stdout
  refs = dict(reversed(line.split("\t")) for line in out.splitlines() if "\t" in line)
  return refs.get(f"refs/tags/{tag}^{{}}") or refs.get(f"refs/tags/{tag}")


def main(argv: list[str]) -> int:
  check = "--check" in argv
  files = [Path(a) for a in argv if a != "--check"]
  if not files:
    print(__doc__, file=sys.stderr)
    return 2
  pins, problems = [], []
  for path in files:
    found, wrong = read_pins(path)
    pins += found
    problems += wrong
  if check:
    for pin in pins:
      actual = tag_commit(pin.repo, pin.tag)
      if actual != pin.commit:
        problems.append(f"{pin.where}: {pin.repo}@{pin.commit} says {pin.tag}, whose commit is "
                        f"{actual or 'not found (no such tag)'}")
  for pin in pins:
    print(f"{pin.where}: {pin.repo} {pin.tag} {pin.commit}")
  for problem in problems:
    print(problem, file=sys.stderr)
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
