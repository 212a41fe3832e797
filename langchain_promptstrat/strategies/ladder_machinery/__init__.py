"""What the token-target rungs and the ladder share, defining no strategy: ``rungs`` (their
marks, the plan protocol, the ``Rung`` base and one pass of the rungs)."""
