"""What the epoch strategies share, defining no strategy: ``frozen_region`` (the boundary, each
call's fate) and ``notice``."""
