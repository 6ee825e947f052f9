from blurbflow.tasks.registry import (
    TASK_TYPES,
    TASKS,
    TaskSpec,
    all_tasks,
    get_task,
    get_type,
    register_tasks,
)

__all__ = ["TASK_TYPES", "TASKS", "TaskSpec", "all_tasks", "get_task", "get_type", "register_tasks"]
