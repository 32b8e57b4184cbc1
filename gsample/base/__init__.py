"""The base layer under every other package: the determinism contract's random stream
(:mod:`gsample.base.random`) and the argument checks every entry point shares
(:mod:`gsample.base.validate`). Imports nothing of gsample above it."""
