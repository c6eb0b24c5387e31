"""Online serving load against an OpenAI-compatible streaming endpoint, and other tools'
serving results read into the store beside parity's own.

- ``arrivals``: when each request is sent (Poisson or gamma gaps, seeded; or all at once).
- ``prompts``: random, fixed-length or dataset prompts.
- ``client``: one streamed request, stamped chunk by chunk (aiohttp, a large read buffer).
- ``load``: one level (a concurrency or a request rate) in one or several client processes,
  with the client's own load measured while it runs.
- ``level``: a level's figures with vLLM's names, its check and its findings.
- ``record``: a level as a stored case; runs of suite ``serving`` with their method labels.
- ``imported``: ``vllm bench serve`` and InferenceX result files as stored runs.
"""
