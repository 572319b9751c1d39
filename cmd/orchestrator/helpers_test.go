package main

import (
	"github.com/rs/zerolog"
	yamlv3 "gopkg.in/yaml.v3"
)

func nopLog() zerolog.Logger { return zerolog.Nop() }

func yamlUnmarshal(b []byte, v any) error { return yamlv3.Unmarshal(b, v) }
