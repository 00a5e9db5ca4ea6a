from tests.test_runner_live import node

__all__ = ["node"]
