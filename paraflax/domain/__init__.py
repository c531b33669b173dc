"""Domain adaptation for paraphrasing: Moore-Lewis selection, pivot paraphrases, LSH."""
