package report

import "github.com/flowmon/flowmon/pipeline"

func pipelineLookups() pipeline.Lookups { return pipeline.Lookups{} }
