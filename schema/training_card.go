package schema

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// TrainingCardSection is the dataset card section of a training export at
// out: what a record is, how it was mined, its columns, what was left out
// and why, and how a trainer loads it. Markdown, for the Hub card.
func TrainingCardSection(out string, o ExportOptions, st ExportStats) string {
	var b strings.Builder
	name := filepath.Base(out)
	style := o.Style
	if style == "" {
		style = StyleConversational
	}
	switch o.To {
	case ExportDPO:
		fmt.Fprintf(&b, "## Preference pairs (`%s`)\n\n", name)
		fmt.Fprintf(&b, "%d pairs from %d dialogues, in TRL's preference type (%s format): `prompt`, `chosen`, `rejected`, "+
			"for DPO, ORPO, CPO or reward modelling. Every pair comes from a real sandbox run: `rejected` is an answer whose code "+
			"failed the problem's tests (the failure is in `rejected_error`), `chosen` the same answer with the code that later "+
			"passed every test in the same dialogue, so the two sides differ in the code alone. Pairs whose code differs only in "+
			"whitespace are left out. `chosen_execution` and `rejected_execution` hold each side's execution turn with its record "+
			"(JSON): `codefeedback verify %s` re-runs both.\n\n", st.Written, st.Read, style, name)
		if st.Training.WithFailure > 0 {
			fmt.Fprintf(&b, "%d of %d dialogues with a failed attempt yielded a pair (%.1f%%).\n\n", st.Training.Paired, st.Training.WithFailure,
				100*float64(st.Training.Paired)/float64(st.Training.WithFailure))
		}
		fmt.Fprintf(&b, "```python\nfrom datasets import load_dataset\nfrom trl import DPOConfig, DPOTrainer\n"+
			"ds = load_dataset(\"json\", data_files=\"%s\", split=\"train\")\n"+
			"trainer = DPOTrainer(model=model, args=DPOConfig(output_dir=\"dpo\"), train_dataset=ds, processing_class=tokenizer)\n```\n\n", name)
	case ExportKTO:
		fmt.Fprintf(&b, "## Unpaired preference (`%s`)\n\n", name)
		fmt.Fprintf(&b, "%d records from %d dialogues, in TRL's unpaired preference type (%s format): `prompt`, `completion`, "+
			"`label`, for KTO or BCO. One record per answer whose code ran against the problem's tests: `label` is true when "+
			"every test passed, false when they failed (the failure in `error`). `execution` holds the run's record (JSON); "+
			"`codefeedback verify %s` re-runs it.\n\n", st.Written, st.Read, style, name)
	case ExportRL:
		fmt.Fprintf(&b, "## RL problems with verifiable rewards (`%s`)\n\n", name)
		fmt.Fprintf(&b, "%d problems from %d dialogues in verl's RL layout (`data_source`, `prompt`, `ability`, "+
			"`reward_model` {`style`: \"rule\", `ground_truth`}, `extra_info`), which TRL's GRPOTrainer also loads (`prompt`, "+
			"the other columns reach reward functions as keyword arguments). `ground_truth` is JSON: the language, the tests "+
			"and how to judge them; POST it to `codefeedback serve`'s `/submit` with the model's `completion` to get the "+
			"reward. Only problems some answer passed are included (`extra_info.reference` is that code, "+
			"`extra_info.reference_execution` its run; `codefeedback verify %s` re-runs it).\n\n", st.Written, st.Read, name)
	default:
		return ""
	}
	if len(st.Training.Skipped) > 0 {
		b.WriteString("Left out:\n\n")
		keys := make([]string, 0, len(st.Training.Skipped))
		for k := range st.Training.Skipped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %d: %s\n", st.Training.Skipped[k], k)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// WriteTrainingCard writes the card section beside out, as out + ".card.md".
func WriteTrainingCard(out string, o ExportOptions, st ExportStats) (string, error) {
	path := out + ".card.md"
	return path, WriteFileAtomic(path, []byte(TrainingCardSection(out, o, st)))
}
