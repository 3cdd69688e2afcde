"""Run the first Python example of README.md the way a user would: in an empty directory, with the
interpreter this script runs under (the fresh venv that has the wheel), the source tree not on the path.

    python .ci/readme_example.py README.md
"""

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def first_python_block(readme: Path) -> str:
    match = re.search(r"^```python\n(.*?)^```", readme.read_text(), flags=re.S | re.M)
    if match is None:
        raise SystemExit(f"{readme}: no ```python block")
    return match.group(1)


def main() -> None:
    readme = Path(sys.argv[1]).resolve()
    source_tree = readme.parent
    code = first_python_block(readme)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory() as tmp:
        where = subprocess.run(
            [sys.executable, "-c", "import gpflow_svgpvae; print(gpflow_svgpvae.__file__)"],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        # The fresh venv may live under the source tree (build/), so compare with its package directory.
        if Path(where).resolve().is_relative_to(source_tree / "gpflow_svgpvae") or not Path(
            where
        ).resolve().is_relative_to(Path(sys.prefix).resolve()):
            raise SystemExit(f"gpflow_svgpvae was imported from {where}, not from the wheel in {sys.prefix}")
        print(f"gpflow_svgpvae from {where}")
        Path(tmp, "readme_example.py").write_text(code)
        start = time.perf_counter()
        subprocess.run([sys.executable, "readme_example.py"], cwd=tmp, env=env, check=True)
        print(f"README example ran in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
