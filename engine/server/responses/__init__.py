"""OpenAI's Responses API on the local server: `/v1/responses` (create, get, delete), its request
translated into the one internal chat request, its stored responses and its stream of output items."""
