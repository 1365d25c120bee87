"""SSH target: real hosts over asyncssh (and the ssh lab that rehearses them)."""
