package design

import (
	"slices"
	"text/template"
	"text/template/parse"
)

// TemplateSecrets reads a boot action template without rendering it and
// returns the names it passes to the secret function as constant strings
// (`secret "NAME"`, `"NAME" | secret`), sorted, without repeats. dynamic
// is true when it also calls secret some other way (with a field, a
// variable or an expression, e.g. `secret .Node.Rack`): what such a call
// asks for is only known when the template is rendered for a node. The
// error is the template's parse error.
func TemplateSecrets(name, text string) (names []string, dynamic bool, err error) {
	t, err := template.New(name).Funcs(TemplateFuncs(nil)).Parse(text)
	if err != nil {
		return nil, false, err
	}
	s := secretScan{names: map[string]bool{}}
	for _, tt := range t.Templates() { // the template and those it defines
		if tt.Tree != nil {
			s.node(tt.Root)
		}
	}
	for n := range s.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, s.dynamic, nil
}

// secretScan walks a parse tree for calls of the secret function.
type secretScan struct {
	names   map[string]bool
	dynamic bool
}

func (s *secretScan) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				s.node(c)
			}
		}
	case *parse.ActionNode:
		s.pipe(n.Pipe)
	case *parse.IfNode:
		s.branch(&n.BranchNode)
	case *parse.RangeNode:
		s.branch(&n.BranchNode)
	case *parse.WithNode:
		s.branch(&n.BranchNode)
	case *parse.TemplateNode:
		s.pipe(n.Pipe)
	case *parse.PipeNode:
		s.pipe(n)
	case *parse.ChainNode:
		s.node(n.Node)
	case *parse.IdentifierNode:
		if n.Ident == "secret" { // an argument of another command: called with nothing
			s.dynamic = true
		}
	}
}

func (s *secretScan) branch(b *parse.BranchNode) {
	s.pipe(b.Pipe)
	s.node(b.List)
	s.node(b.ElseList)
}

func (s *secretScan) pipe(p *parse.PipeNode) {
	if p == nil {
		return
	}
	for i, c := range p.Cmds {
		if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "secret" {
			var piped *parse.CommandNode
			if i > 0 {
				piped = p.Cmds[i-1]
			}
			s.call(c.Args[1:], piped)
			continue
		}
		for _, a := range c.Args {
			s.node(a)
		}
	}
}

// call records one call of secret with its arguments; piped is the
// command whose value the pipeline passes as the last argument (nil when
// secret starts the pipeline).
func (s *secretScan) call(args []parse.Node, piped *parse.CommandNode) {
	if name, ok := constString(args, piped); ok {
		s.names[name] = true
		return
	}
	s.dynamic = true
	for _, a := range args {
		s.node(a)
	}
}

// constString: the call's one argument is a constant string.
func constString(args []parse.Node, piped *parse.CommandNode) (string, bool) {
	switch {
	case len(args) == 1 && piped == nil:
		str, ok := args[0].(*parse.StringNode)
		if ok {
			return str.Text, true
		}
	case len(args) == 0 && piped != nil && len(piped.Args) == 1:
		str, ok := piped.Args[0].(*parse.StringNode)
		if ok {
			return str.Text, true
		}
	}
	return "", false
}
