package gnmi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gnmiVersion is the gNMI specification version the target answers.
const gnmiVersion = "0.10.0"

// models are the OpenConfig models the target serves.
var models = []*gpb.ModelData{
	{Name: "openconfig-interfaces", Organization: "OpenConfig working group", Version: "3.7.1"},
	{Name: "openconfig-if-ethernet", Organization: "OpenConfig working group", Version: "2.13.0"},
	{Name: "openconfig-if-aggregate", Organization: "OpenConfig working group", Version: "2.4.4"},
	{Name: "openconfig-vlan", Organization: "OpenConfig working group", Version: "3.2.2"},
	{Name: "openconfig-network-instance", Organization: "OpenConfig working group", Version: "4.4.1"},
	{Name: "openconfig-lacp", Organization: "OpenConfig working group", Version: "2.0.0"},
	{Name: "openconfig-lldp", Organization: "OpenConfig working group", Version: "0.2.1"},
}

type service struct {
	gpb.UnimplementedGNMIServer
	t *Target
}

// authorized checks the username and password metadata of ctx.
func (t *Target) authorized(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	one := func(k string) string {
		if v := md.Get(k); len(v) == 1 {
			return v[0]
		}
		return ""
	}
	u, p := one("username"), one("password")
	okU := subtle.ConstantTimeCompare([]byte(u), []byte(t.cfg.Username)) == 1
	okP := subtle.ConstantTimeCompare([]byte(p), []byte(t.cfg.Password)) == 1
	if okU && okP {
		return nil
	}
	t.mu.Lock()
	t.authFail++
	t.mu.Unlock()
	return status.Error(codes.Unauthenticated, "authentication failed: username or password refused")
}

func (t *Target) unaryAuth(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := t.authorized(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (t *Target) streamAuth(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := t.authorized(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

func (s *service) Capabilities(context.Context, *gpb.CapabilityRequest) (*gpb.CapabilityResponse, error) {
	return &gpb.CapabilityResponse{SupportedModels: models, GNMIVersion: gnmiVersion,
		SupportedEncodings: []gpb.Encoding{gpb.Encoding_JSON_IETF, gpb.Encoding_JSON}}, nil
}

// checkEncoding accepts JSON_IETF and JSON.
func checkEncoding(e gpb.Encoding) error {
	if e != gpb.Encoding_JSON_IETF && e != gpb.Encoding_JSON {
		return status.Errorf(codes.Unimplemented, "encoding %s not supported (JSON_IETF, JSON)", e)
	}
	return nil
}

// fullPath is prefix + p's elements, and the target either names.
func fullPath(prefix, p *gpb.Path) ([]*gpb.PathElem, string, error) {
	out := append(append([]*gpb.PathElem(nil), prefix.GetElem()...), p.GetElem()...)
	if len(out) > maxPathElems {
		return nil, "", status.Errorf(codes.InvalidArgument, "path of more than %d elements", maxPathElems)
	}
	//lint:ignore SA1019 refusing the deprecated field is the point
	if len(p.GetElement()) > 0 || len(prefix.GetElement()) > 0 { //nolint:staticcheck // as above
		return nil, "", status.Error(codes.InvalidArgument, "the deprecated element paths are not supported; use elem")
	}
	target := prefix.GetTarget()
	if target == "" {
		target = p.GetTarget()
	}
	return out, target, nil
}

func (s *service) Get(ctx context.Context, req *gpb.GetRequest) (*gpb.GetResponse, error) {
	if err := checkEncoding(req.GetEncoding()); err != nil {
		return nil, err
	}
	if len(req.GetPath()) > maxPaths {
		return nil, status.Errorf(codes.InvalidArgument, "more than %d paths", maxPaths)
	}
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var notes []*gpb.Notification
	now := time.Now().UnixNano()
	for _, p := range req.GetPath() {
		el, target, err := fullPath(req.GetPrefix(), p)
		if err != nil {
			return nil, err
		}
		sw, err := t.selectSwitch(target)
		if err != nil {
			return nil, status.Error(codes.NotFound, err.Error())
		}
		sw.stats.Gets++
		v, ok := lookup(sw.tree, el)
		if !ok {
			return nil, status.Errorf(codes.NotFound, "switch %s has nothing at %s", sw.name, PathString(&gpb.Path{Elem: el}))
		}
		tv, err := encode(v, el, req.GetEncoding())
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		notes = append(notes, &gpb.Notification{Timestamp: now, Prefix: &gpb.Path{Target: target},
			Update: []*gpb.Update{{Path: &gpb.Path{Elem: el}, Val: tv}}})
	}
	return &gpb.GetResponse{Notification: notes}, nil
}

// encode renders v (the node at el) in enc.
func encode(v any, el []*gpb.PathElem, enc gpb.Encoding) (*gpb.TypedValue, error) {
	if enc == gpb.Encoding_JSON_IETF {
		v = qualify(v, moduleOf(el), len(el) == 0)
		b, err := json.Marshal(v)
		return &gpb.TypedValue{Value: &gpb.TypedValue_JsonIetfVal{JsonIetfVal: b}}, err
	}
	b, err := json.Marshal(v)
	return &gpb.TypedValue{Value: &gpb.TypedValue_JsonVal{JsonVal: b}}, err
}

// decodeJSON reads a JSON value (numbers as float64), module prefixes
// dropped.
func decodeJSON(b []byte) (any, error) {
	if len(b) > maxMsgSize {
		return nil, fmt.Errorf("value larger than %d bytes", maxMsgSize)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("value holds more than one JSON value")
	}
	return stripTree(v, 0)
}

// decode reads a Set's typed value.
func decode(tv *gpb.TypedValue) (any, error) {
	switch v := tv.GetValue().(type) {
	case *gpb.TypedValue_JsonIetfVal:
		return decodeJSON(v.JsonIetfVal)
	case *gpb.TypedValue_JsonVal:
		return decodeJSON(v.JsonVal)
	case *gpb.TypedValue_StringVal:
		return v.StringVal, nil
	case *gpb.TypedValue_AsciiVal:
		return v.AsciiVal, nil
	case *gpb.TypedValue_BoolVal:
		return v.BoolVal, nil
	case *gpb.TypedValue_UintVal:
		return float64(v.UintVal), nil
	case *gpb.TypedValue_IntVal:
		return float64(v.IntVal), nil
	case *gpb.TypedValue_LeaflistVal:
		out := make([]any, 0, len(v.LeaflistVal.GetElement()))
		for _, e := range v.LeaflistVal.GetElement() {
			x, err := decode(e)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("value type %T not supported (JSON_IETF, JSON or a scalar)", tv.GetValue())
}

// readOnly reports a path a client may not set: state and LLDP.
func readOnly(el []*gpb.PathElem) bool {
	for i, e := range el {
		n := stripPrefix(e.GetName())
		if n == "state" || (i == 0 && n == "lldp") {
			return true
		}
	}
	return false
}
