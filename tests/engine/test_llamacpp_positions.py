"""Token counts to llama.cpp positions where M-RoPE images take fewer positions than tokens
(engine/backends/llamacpp_positions.py): no model, just the arithmetic every sequence call relies on."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.llamacpp_positions import Place, before, cell_end, mrope_positions, position, touches

# 4 text tokens, an image of 6 tokens in 1 position, 3 text tokens, an image of 4 tokens in 2 positions
PLACES = [Place(4, 6, 1), Place(13, 4, 2)]


@pytest.mark.parametrize("k, want", [(0, 0), (4, 4), (10, 5), (12, 7), (13, 8), (17, 10), (20, 13)])
def test_a_tokens_position_is_its_index_less_what_the_images_before_it_saved(k, want):
    assert position(PLACES, k) == want


@pytest.mark.parametrize("k", [5, 9, 14, 16])
def test_no_position_lies_inside_an_image(k):
    with pytest.raises(ValueError, match="inside an image"):
        position(PLACES, k)


def test_without_places_positions_are_token_counts():
    assert [position([], k) for k in range(5)] == [0, 1, 2, 3, 4]
    assert cell_end([], 7) == 7


@pytest.mark.parametrize("n, want", [(4, 4), (10, 5), (12, 7), (17, 9), (18, 11)])
def test_the_last_cell_of_a_sequence_ending_in_an_image_holds_its_first_position(n, want):
    """llama.cpp's seq_pos_max + 1: all of an image's cells hold its first position."""
    assert cell_end(before(PLACES, n), n) == want


def test_what_a_shorter_prefix_keeps_and_which_spans_touch_an_image():
    assert before(PLACES, 12) == PLACES[:1] and before(PLACES, 9) == [] and before(PLACES, 17) == PLACES
    assert touches(PLACES, 0, 5) and touches(PLACES, 9, 11) and touches(PLACES, 16, 30)
    assert not touches(PLACES, 0, 4) and not touches(PLACES, 10, 13) and not touches(PLACES, 17, 40)


def test_an_images_mrope_positions_are_its_rows_and_columns_from_its_first_position():
    got = mrope_positions(7, nx=3, ny=2)
    assert got.dtype == np.int32 and got.shape == (4, 6)
    assert got.tolist() == [[7] * 6, [7, 7, 7, 8, 8, 8], [7, 8, 9, 7, 8, 9], [0] * 6]
