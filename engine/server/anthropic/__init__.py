"""Anthropic Messages on the local server: `/v1/messages` and its token count, translated into the one
internal chat request and back into Anthropic's shapes, errors and stream events."""
