package pipeline

import "github.com/flowmon/flowmon/rules"

// attachRules makes eng a consumer of cfg's pipeline, as the agent does
// (agent.RulesConsumer; the pipeline's tests cannot import the agent),
// and returns it.
func attachRules(cfg *Config, eng *rules.Engine) *rules.Engine {
	cfg.Consumers = append(cfg.Consumers, func(_, _ int, lk Lookups) (Consumer, error) {
		return eng.NewShard(rules.Lookups{Watchlists: lk.Watchlists, Novel: lk.Novel})
	})
	return eng
}

// fired is the alerts eng's rule name raised.
func fired(eng *rules.Engine, name string) uint64 {
	return eng.Manager().Stats().ByRule[name].Fired
}
