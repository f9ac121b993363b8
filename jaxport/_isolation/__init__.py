"""Child processes that run native code on untrusted bytes, so that a crash or a hang there
ends one request, not the process that asked (see ``docs/security.md``)."""
