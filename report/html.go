package report

import (
	_ "embed"
	"html/template"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("report").Parse(pageHTML))
