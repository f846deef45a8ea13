"""A plugin distribution that fails at import (tests isolation)."""
