"""Tell whether training is bound by its input, its compute or its memory, and what to do."""
