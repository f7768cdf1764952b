"""Builds libagentjail.so from the source tree this directory sits in and
ships it inside the package, so an installed agentjail needs nothing but
itself (pyproject.toml holds the metadata)."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB = os.path.join(ROOT, "build", "libagentjail.so.0")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if not os.path.exists(os.path.join(ROOT, "Makefile")):
            raise SystemExit(
                "agentjail: the package is built from the agentjail source tree "
                "(python/ beside its Makefile); this copy has no ../Makefile")
        # make decides what is out of date; its own errors name what is
        # missing (scripts/install-deps.sh installs it).
        r = subprocess.run(["make", "-C", ROOT, "build/libagentjail.so"])
        if r.returncode != 0:
            raise SystemExit("agentjail: building libagentjail.so failed (see make's output "
                             "above; ./scripts/install-deps.sh installs what it needs)")
        dest = os.path.join(self.build_lib, "agentjail", "_lib")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(LIB, os.path.join(dest, "libagentjail.so.0"))


class BinaryDistribution(Distribution):
    """The wheel holds a Linux shared library: tag it for the platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
