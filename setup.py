"""Build the optional native pointer chase; everything else is in pyproject.toml.

The extension is optional: on a machine without a C compiler parity still installs, and the
CPU latency suite says what is missing when it is used (``parity.families.latency.chase.native``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "parity.families.latency.chase._chase",
            sources=["src/parity/families/latency/chase/_chase.c"],
            extra_compile_args=["-O2", "-std=c11"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]
)
