"""Errors in words: the sentence a person reads says what happened and what to do, without a class
name; the class name and the raw text stay available as details."""

from __future__ import annotations

import pytest

from app.error_words import in_words
from engine import ContextOverflowError, RemoteError
from engine.errors import NetworkError
from engine.remote.errors import ConnectionLostError, ServerUnreachableError

REFUSED = "connection refused: nothing listens at 127.0.0.1:8799 (is the server running?)"


@pytest.mark.parametrize("error, sentence", [
    (f"ServerUnreachableError: {REFUSED}",
     "Nothing answers at 127.0.0.1:8799. Start the server there, or check the address and port."),
    (ServerUnreachableError(REFUSED),
     "Nothing answers at 127.0.0.1:8799. Start the server there, or check the address and port."),
    (REFUSED,  # a load failure's message carries no class name
     "Nothing answers at 127.0.0.1:8799. Start the server there, or check the address and port."),
    ("ServerUnreachableError: DNS: the host name 'gpu-box' could not be resolved",
     "Could not find gpu-box: check the address, and that this computer is online."),
    ("ServerUnreachableError: timeout: 10.0.0.5:8000 did not answer in time",
     "10.0.0.5:8000 did not answer in time. Check that it is running and reachable, then try again."),
    (NetworkError("search 'qwen': the Hugging Face Hub (huggingface.co) cannot be reached (gaierror: [Errno -2] "
                  "Name or service not known). Check the connection and try again."),
     "Could not reach Hugging Face: check that this computer is online, then try again."),
    (NetworkError("search 'qwen': network error (ConnectError: [Errno -2] Name or service not known). Check "
                  "the connection and try again."),
     "Could not reach Hugging Face: this computer seems to be offline. Check the network connection and "
     "try again."),
    (NetworkError("org/x: network error (ReadTimeout: ...). Check the connection and try again; the download "
                  "resumes where it stopped."),
     "The download was cut off by a network error. Check the connection and try again: it resumes where it "
     "stopped."),
    ("ConnectError: [Errno -2] Name or service not known",
     "Could not find the server's address: check the address, and that this computer is online."),
    (ConnectionLostError("the connection to 127.0.0.1:8799 dropped"),
     "The connection to the server dropped during this reply. What arrived is kept; Continue writes the rest."),
    (ContextOverflowError("prompt of 5,000 tokens does not fit in 4,096"),
     "This conversation no longer fits in the model's context, so it cannot answer. Let it leave out "
     "earlier messages (Conversation settings, When too long), or start a new conversation (Ctrl+N) to go on."),
    ("AuthenticationFailedError: 401 Unauthorized: 127.0.0.1:8317 refused the API key (check it)",
     "The server refused the API key: check it."),
    ("AuthenticationFailedError: 401 Unauthorized: 127.0.0.1:8317 refused the API key (none was given)",
     "The server asks for an API key: enter the one it expects."),
    ("RuntimeError: the disk said no", "The disk said no."),
    (RemoteError("127.0.0.1:8799 answered 500: boom"), "127.0.0.1:8799 answered 500: boom."),
])
def test_the_sentence_says_what_happened_and_what_to_do(error, sentence):
    words = in_words(error)
    assert words.sentence == sentence
    assert "Error:" not in words.sentence and "Errno" not in words.sentence


def test_the_details_keep_the_class_name_and_the_raw_text():
    assert in_words(ServerUnreachableError(REFUSED)).details == f"ServerUnreachableError: {REFUSED}"
    assert in_words(f"ServerUnreachableError: {REFUSED}").details == f"ServerUnreachableError: {REFUSED}"
    assert in_words("RuntimeError: the disk said no").details == "RuntimeError: the disk said no"
    assert in_words("plain words already.").details == ""  # nothing more to show
