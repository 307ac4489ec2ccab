"""The scripts of `etcrun` and `etcpre` in the venv's bin, written by make over pip's.

Each runs its command under `python -S`: processing site-packages (the .pth files and
the editable install's import hook, which loads pathlib) costs 10-15 ms of every
run, and a course runs hundreds of short ones. The repository goes first on sys.path
and, for etcpre, which needs tree-sitter and libclang, site-packages goes last, as
site would put it. etcrun's common run needs neither (`etcrun_fast.py`).
"""

from __future__ import annotations

import os
import sys
import sysconfig

# command: (module with main(), does it import from site-packages)
SCRIPTS = {"etcrun": ("etcpre.cli.etcrun_fast", False),
           "etcpre": ("etcpre.cli.etcpre_cmd", True)}


def text(module: str, site_packages: bool) -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = "".join(f"sys.path.append({p!r})\n"
                    for p in dict.fromkeys([sysconfig.get_path("purelib"),
                                            sysconfig.get_path("platlib")])) \
        if site_packages else ""
    return (f"#!{sys.executable} -S\n"
            "# written by make (etcpre/cli/venv_scripts.py): without site's start-up\n"
            "import sys\n"
            f"sys.path.insert(0, {root!r})\n"
            f"{paths}"
            f"from {module} import main\n"
            "sys.exit(main())\n")


def write(bin_dir: str) -> None:
    for name, (module, site_packages) in SCRIPTS.items():
        path = os.path.join(bin_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text(module, site_packages))
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)


if __name__ == "__main__":
    write(sys.argv[1])
