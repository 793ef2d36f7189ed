//go:build !amd64

package kbf

const hasLineCheck = false

func lineCheck(lq *lineQuery, p *lineParams) { panic("kbf: lineCheck without AVX-512") }
