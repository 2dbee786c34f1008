package main

import (
	"fmt"
	"strings"
)

func emitConstants(m *model) string {
	var b w
	b.WriteString(header)
	b.p("package acp\n")
	b.p("// ProtocolVersionNumber is the ACP protocol version this SDK speaks.")
	b.p("const ProtocolVersionNumber = %d\n", m.protocolVer)
	b.p("// Methods an agent handles (the client sends them).")
	b.p("const (")
	for _, c := range m.agentConsts {
		b.p("// %s is the %q method.", c.GoName, c.Wire)
		b.p("%s = %q", c.GoName, c.Wire)
	}
	b.p(")\n")
	b.p("// Methods a client handles (the agent sends them).")
	b.p("const (")
	for _, c := range m.clientConsts {
		b.p("// %s is the %q method.", c.GoName, c.Wire)
		b.p("%s = %q", c.GoName, c.Wire)
	}
	b.p(")")
	return b.String()
}

func emitHelpers(m *model) string {
	var b w
	b.WriteString(header)
	b.p("package acp\n")
	for _, t := range m.sorted() {
		if t.Kind != kindUnion {
			continue
		}
		for _, v := range t.Union.Variants {
			if v.CtorParams == nil {
				continue
			}
			var params, assigns []string
			for _, f := range v.CtorParams {
				pn := lowerFirst(f.JSONName)
				params = append(params, pn+" "+f.GoType)
				assigns = append(assigns, fmt.Sprintf("%s: %s", f.GoName, pn))
			}
			assigns = append(assigns, fmt.Sprintf("%s: %q", exportName(t.Union.Discriminator), v.Const))
			fn := "New" + t.Name + v.Field
			b.p("// %s returns a %s holding the %q variant with its required fields.", fn, t.Name, v.Const)
			b.p("func %s(%s) %s {", fn, strings.Join(params, ", "), t.Name)
			b.p("return %s{%s: &%s{%s}}", t.Name, v.Field, v.TypeName, strings.Join(assigns, ", "))
			b.p("}\n")
		}
	}
	for _, c := range m.compat {
		b.WriteString(c)
	}
	return b.String()
}

// ifaceDoc documents the generated interfaces.
var ifaceDoc = map[string]string{
	"Agent":              "Agent is what an ACP agent implements: the stable methods a client calls.\nOptional groups are AgentLoader and AgentExperimental; a missing optional\nmethod answers -32601.",
	"AgentLoader":        "AgentLoader is implemented by agents that support session/load.",
	"AgentExperimental":  "AgentExperimental holds the unstable agent methods. Dispatch checks each\nmethod on its own, so an agent may implement any subset.",
	"Client":             "Client is what an ACP client implements: the stable methods an agent calls.",
	"ClientExperimental": "ClientExperimental holds the unstable client methods. Dispatch checks each\nmethod on its own, so a client may implement any subset.",
}

func signature(mt *method) string {
	if mt.Result == "" {
		return fmt.Sprintf("%s(ctx context.Context, params %s) error", mt.GoName, mt.Params)
	}
	return fmt.Sprintf("%s(ctx context.Context, params %s) (%s, error)", mt.GoName, mt.Params, mt.Result)
}

func emitInterfaces(b *w, methods []*method, names []string) {
	// The methods' own interfaces follow the fixed ones, in method order.
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, mt := range methods {
		if !seen[mt.Interface] {
			seen[mt.Interface] = true
			names = append(names, mt.Interface)
		}
	}
	for _, iface := range names {
		doc, own := ifaceDoc[iface]
		if !own {
			doc = ownIfaceDoc(iface, methods)
		}
		b.WriteString(docComment(doc))
		b.p("type %s interface {", iface)
		for _, mt := range methods {
			if mt.Interface != iface {
				continue
			}
			doc := strings.TrimSpace(mt.Doc)
			if doc == "" {
				doc = fmt.Sprintf("%s handles %q.", mt.GoName, mt.Wire)
			}
			if mt.Legacy {
				doc += fmt.Sprintf("\n\nDeprecated: implement %s instead; %q is stable. Dispatch still calls this method when %s is missing.", mt.Current, mt.Wire, mt.Current)
			}
			b.WriteString(docComment(doc))
			b.p("%s", signature(mt))
		}
		b.p("}\n")
	}
}

// ownIfaceDoc documents the small interface of one optional method.
func ownIfaceDoc(iface string, methods []*method) string {
	for _, mt := range methods {
		if mt.Interface != iface {
			continue
		}
		impl := "an agent"
		if strings.HasPrefix(iface, "Client") {
			impl = "a client"
		}
		var missing string
		switch {
		case len(mt.Alternatives) > 0:
			missing = fmt.Sprintf("Dispatch also accepts %s (the v0.13.5 name); with neither, %q answers -32601.", strings.Join(mt.Alternatives, ", "), mt.Wire)
		case impl == "a client":
			missing = fmt.Sprintf("Without it, %q goes to ExtensionMethodHandler (else -32601), as before this SDK knew the method.", mt.Wire)
		default:
			missing = fmt.Sprintf("Without it, %q answers -32601.", mt.Wire)
		}
		return fmt.Sprintf("%s is implemented by %s that handles %q; the connection finds it by type assertion. %s", iface, impl, mt.Wire, missing)
	}
	return iface + " is an optional handler interface."
}

// emitDispatch writes the inbound switch: decode params (-32602 on failure),
// Validate (-32602), find the implementation (-32601 when an optional method
// is missing), call it and convert its error with toRequestError.
func emitDispatch(b *w, methods []*method, recv, implVar string) {
	for _, mt := range methods {
		if mt.Legacy {
			continue
		}
		b.p("case %q:", mt.Wire)
		if mt.New {
			// Not implemented: leave the message where v0.13.5 sent it.
			b.p("if _, ok := %s.(interface{ %s }); !ok {\nreturn nil, nil, false\n}", implVar, signature(mt))
		}
		b.p("var p %s", mt.Params)
		b.p("if err := decodeParams(params, &p); err != nil {\nreturn nil, NewInvalidParams(map[string]any{\"error\": err.Error()}), true\n}")
		b.p("if err := p.Validate(); err != nil {\nreturn nil, NewInvalidParams(map[string]any{\"error\": err.Error()}), true\n}")
		call := "impl." + mt.GoName + "(ctx, p)"
		iface := ""
		switch mt.Interface {
		case "Agent", "Client":
			b.p("impl := %s", implVar)
		default:
			iface = fmt.Sprintf("interface{ %s }", signature(mt))
			b.p("impl, ok := %s.(%s)", implVar, iface)
			if len(mt.Alternatives) > 0 {
				b.p("if !ok {")
				for _, alt := range mt.Alternatives {
					altMt := *mt
					altMt.GoName = alt
					b.p("if alt, altOK := %s.(interface{ %s }); altOK {", implVar, signature(&altMt))
					if mt.Result == "" {
						b.p("if err := alt.%s(ctx, p); err != nil {\nreturn nil, toRequestError(err), true\n}\nreturn nil, nil, true", alt)
					} else {
						b.p("resp, err := alt.%s(ctx, p)\nif err != nil {\nreturn nil, toRequestError(err), true\n}\nreturn resp, nil, true", alt)
					}
					b.p("}")
				}
				b.p("}")
			}
			b.p("if !ok {\nreturn nil, NewMethodNotFound(method), true\n}")
		}
		if mt.Wire == "session/prompt" && recv == "agent" {
			b.p("ctx, done := a.promptContext(ctx, p.SessionId)\ndefer done()")
		}
		if mt.Wire == "session/cancel" && recv == "agent" {
			b.p("a.cancelPrompt(p.SessionId)")
		}
		if mt.Result == "" {
			b.p("if err := %s; err != nil {\nreturn nil, toRequestError(err), true\n}\nreturn nil, nil, true", call)
		} else {
			b.p("resp, err := %s\nif err != nil {\nreturn nil, toRequestError(err), true\n}\nreturn resp, nil, true", call)
		}
	}
}

// emitOutbound writes one wrapper per method the other side handles.
func emitOutbound(b *w, m *model, methods []*method, recvType string, skip map[string]bool) {
	for _, mt := range methods {
		if skip[mt.GoName] {
			continue
		}
		if mt.Legacy {
			sig := strings.TrimPrefix(signature(mt), mt.GoName)
			b.p("// %s sends %q.\n//\n// Deprecated: use %s; %q is stable.", mt.GoName, mt.Wire, mt.Current, mt.Wire)
			b.p("func (c *%s) %s%s {\nreturn c.%s(ctx, params)\n}\n", recvType, mt.GoName, sig, mt.Current)
			continue
		}
		if mt.Result == "" {
			b.p("// %s sends the %q notification.", mt.GoName, mt.Wire)
			b.p("func (c *%s) %s(ctx context.Context, params %s) error {", recvType, mt.GoName, mt.Params)
			b.p("return c.conn.SendNotification(ctx, %q, params)\n}\n", mt.Wire)
			continue
		}
		b.p("// %s sends the %q request and waits for its result.", mt.GoName, mt.Wire)
		b.p("func (c *%s) %s(ctx context.Context, params %s) (%s, error) {", recvType, mt.GoName, mt.Params, mt.Result)
		b.p("resp, err := SendRequest[%s](c.conn, ctx, %q, params)", mt.Result, mt.Wire)
		zero := mt.Result + "{}"
		if t := m.types[mt.Result]; t != nil && t.Kind != kindStruct && t.Kind != kindUnion {
			zero = "*new(" + mt.Result + ")"
		}
		b.p("if err != nil {\nreturn %s, err\n}\nreturn resp, nil\n}\n", zero)
	}
}

func emitAgentFile(m *model) string {
	var b w
	b.WriteString(header)
	b.p("package acp\n")
	b.p("import (\n\"context\"\n\"encoding/json\"\n)\n")
	emitInterfaces(&b, m.agent, []string{"Agent", "AgentLoader", "AgentExperimental"})
	b.p("// dispatchAgentMethod runs an inbound agent method. known is false when")
	b.p("// method is not one the SDK dispatches.")
	b.p("func (a *AgentSideConnection) dispatchAgentMethod(ctx context.Context, method string, params json.RawMessage) (result any, rerr *RequestError, known bool) {")
	b.p("switch method {")
	emitDispatch(&b, m.agent, "agent", "a.agent")
	b.p("}\nreturn nil, nil, false\n}\n")
	emitOutbound(&b, m, m.client, "AgentSideConnection", nil)
	return b.String()
}

func emitClientFile(m *model) string {
	var b w
	b.WriteString(header)
	b.p("package acp\n")
	b.p("import (\n\"context\"\n\"encoding/json\"\n)\n")
	emitInterfaces(&b, m.client, []string{"Client", "ClientExperimental"})
	b.p("// dispatchClientMethod runs an inbound client method. known is false when")
	b.p("// method is not one the SDK dispatches.")
	b.p("func dispatchClientMethod(ctx context.Context, client Client, method string, params json.RawMessage) (result any, rerr *RequestError, known bool) {")
	b.p("switch method {")
	emitDispatch(&b, m.client, "client", "client")
	b.p("}\nreturn nil, nil, false\n}\n")
	// Prompt is hand-written (client.go): it also sends session/cancel.
	emitOutbound(&b, m, m.agent, "ClientSideConnection", map[string]bool{"Prompt": true})
	return b.String()
}

// emitIndex writes a test-only index of the generated types, which the golden
// and fuzz tests iterate over.
func emitIndex(m *model) string {
	var b w
	b.WriteString(header)
	b.p("package acp\n")
	b.p("// indexedType is a generated type the golden and fuzz tests cover.")
	b.p("type indexedType struct {")
	b.p("Name string")
	b.p("New func() any")
	b.p("// Variants are the union's field names, in schema order (nil for structs).")
	b.p("Variants []string")
	b.p("// IntConsts are the integer values of constant variants (ErrorCode).")
	b.p("IntConsts map[string]int")
	b.p("}\n")
	b.p("// generatedUnions are every generated union.")
	b.p("var generatedUnions = []indexedType{")
	for _, t := range m.sorted() {
		if t.Kind != kindUnion {
			continue
		}
		var vs, consts []string
		for _, v := range t.Union.Variants {
			vs = append(vs, fmt.Sprintf("%q", v.Field))
			if v.IntConst != nil {
				consts = append(consts, fmt.Sprintf("%q: %d", v.Field, *v.IntConst))
			}
		}
		ic := ""
		if len(consts) > 0 {
			ic = fmt.Sprintf(", IntConsts: map[string]int{%s}", strings.Join(consts, ", "))
		}
		b.p("{Name: %q, New: func() any { return new(%s) }, Variants: []string{%s}%s},", t.Name, t.Name, strings.Join(vs, ", "), ic)
	}
	b.p("}\n")
	b.p("// generatedMessages are every generated method payload (requests,")
	b.p("// responses, notifications) that is not a union.")
	b.p("var generatedMessages = []indexedType{")
	for _, t := range m.sorted() {
		if t.Kind != kindStruct || !t.Validate {
			continue
		}
		b.p("{Name: %q, New: func() any { return new(%s) }},", t.Name, t.Name)
	}
	b.p("}")
	return b.String()
}
