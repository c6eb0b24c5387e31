"""The decode family: the offline engine step of an LLM decoder per batch size (``suite``), and
the online client that measures a served endpoint (``serving``)."""

from parity.model.family import Family

FAMILY = Family(name="decode", suite="parity.families.decode.suite:DecodeSuite",
                view="parity.families.decode.views:VIEW", description="the offline decode step per batch size",
                order=6, stored_as=("serving",))
