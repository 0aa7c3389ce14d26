"""Controller for an approved, card-reading electronic dealing shoe (Pai Gow Poker)."""

__version__ = "0.1.0"
