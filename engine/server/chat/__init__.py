"""OpenAI chat/completions and completions: the request bodies (also the internal request every API is
translated into), tool shapes, log probabilities and the reply objects, whole and streamed."""
