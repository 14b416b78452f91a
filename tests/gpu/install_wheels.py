"""Installs, offline, each package of tests/gpu/wheels.txt that does not import.

  python tests/gpu/install_wheels.py WHEEL_DIR

Standard library only (it runs before anything is installed). Tries a plain
`pip install --no-index --no-deps`, then `--user`; prints what it did.
"""

import importlib.util
import os
import site
import subprocess
import sys

LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wheels.txt")


def missing() -> list[str]:
  out = []
  with open(LIST) as f:
    for line in f:
      fields = line.split("#")[0].split()
      if len(fields) == 2 and importlib.util.find_spec(fields[1]) is None:
        out.append(fields[0])
  return out


def main(argv) -> int:
  wheels = argv[1] if len(argv) > 1 else "gpu_deps/wheels"
  need = missing()
  if not need:
    print("every package of tests/gpu/wheels.txt imports: nothing to install")
    return 0
  print(f"not importable, installing from {wheels}: {' '.join(need)}")
  if not os.path.isdir(wheels):
    print(f"error: {wheels} does not exist; run tests/gpu/fetch_deps.sh")
    return 1
  base = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps"]
  base += ["--find-links", wheels, *need]
  for extra in ([], ["--user"]):
    proc = subprocess.run(base[:4] + extra + base[4:], check=False)
    if proc.returncode == 0:
      if extra:  # a user site created just now is not on sys.path yet
        sys.path.append(site.getusersitepackages())
      importlib.invalidate_caches()
      still = missing()
      print("installed" + (f"; still missing: {still}" if still else ""))
      return 1 if still else 0
  return 1


if __name__ == "__main__":
  sys.exit(main(sys.argv))
