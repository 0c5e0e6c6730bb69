package policy

// Limits of spec §8, as data. The validator enforces them and the public
// configuration publishes them, so the two can never disagree.
const (
	MaxBodyBytes     = 65536
	MaxQuestions     = 32
	MinQuestions     = 1
	MaxChoiceOptions = 255
	MinChoiceOptions = 1
	MaxScoreLevels   = 10
	MinScoreLevels   = 2
	MaxDepth         = 32
	MaxModelChars    = 128
	MaxNameChars     = 128
)

// Contract is the maintained compatibility snapshot (spec §9.3).
const Contract = "vendor-2026-09-18"
