"""What nvq offers coding agents: its Agent Skill (SKILL.md, package data) and, in
nvq.agents.mcp_server, an MCP server. Nothing here is imported by a plain CLI call."""
