"""The compiled extension module (``_module.c``): the kernels are reached through ctypes
(:mod:`._native`); these two functions check the arrays handed to them."""

from typing import Any

def address(array: Any, floats: int, writable: bool, kernel: str, name: str) -> int:
    """The address of a float32, aligned, C-contiguous array of at least ``floats`` elements
    (writable if ``writable``); 0 for None; TypeError or ValueError otherwise."""

def rows(array: Any, nrows: int, ncols: int, writable: bool, kernel: str,
         name: str) -> tuple[int, int]:
    """(address, row stride in floats) of a float32, aligned ``nrows`` x ``ncols`` array whose
    rows are contiguous and a whole number of floats apart; (0, 0) for None; TypeError or
    ValueError otherwise."""

def strided(array: Any, shape: tuple[int, ...], writable: bool, kernel: str,
            name: str) -> tuple[int, tuple[int, ...]]:
    """(address, strides in floats) of a float32 array of exactly ``shape``, read through its
    own strides (written: rows contiguous, no element sharing memory); (0, zeros) for None;
    TypeError or ValueError otherwise."""
