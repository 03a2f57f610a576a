#!/bin/sh
# akv serve's --guard-command for AgentDojo (scripts/agentdojo; spec/serving.md SV7): reads one
# tool result on stdin and exits 1 (flag: evict it) when it holds the text of AgentDojo's
# important_instructions attack, its <INFORMATION> block and "This is an important message from
# me", 0 (keep it) otherwise. A function of the bytes, as SV7 asks: the server keeps verdicts by
# SHA-256.
if grep -q -F -e '<INFORMATION>' -e 'This is an important message from me'; then exit 1; fi
exit 0
