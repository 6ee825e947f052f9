from blurbflow.tasks.registry import TASK_TYPES, TASKS, TaskSpec, get_task

__all__ = ["TASK_TYPES", "TASKS", "TaskSpec", "get_task"]
