package design

// Defaults are trees laid beneath each document before decoding, so that the
// inheritance rules decide between a default and what the operator wrote
// (an explicit false or 0 wins over a default).

var defaultPos = Pos{File: "(default)"}

func dStr(s string) *Value  { return NewScalar(TagStr, s, defaultPos) }
func dInt(n string) *Value  { return NewScalar(TagInt, n, defaultPos) }
func dBool(b string) *Value { return NewScalar(TagBool, b, defaultPos) }

// dMap builds a mapping from key, value pairs.
func dMap(kv ...any) *Value {
	entries := make([]Entry, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		entries = append(entries, Entry{Key: kv[i].(string), KeyPos: defaultPos, Value: kv[i+1].(*Value)})
	}
	return NewMap(defaultPos, entries)
}

func specDefaults(spec *Value) *Value { return dMap("spec", spec) }

var (
	siteDefaults = specDefaults(dMap(
		"drivers", dMap("server", dStr("maas"), "oob", dStr("ipmi"), "network", dStr("noop")),
	))
	networkDefaults = specDefaults(dMap("mtu", dInt("1500")))
	linkDefaults    = specDefaults(dMap(
		"bonding", dMap("mode", dStr("disabled")),
		"mtu", dInt("1500"),
		"trunking", dMap("mode", dStr("disabled")),
	))
	hardwareDefaults = specDefaults(dMap(
		"bootMode", dStr("uefi"),
		"oob", dMap("type", dStr("ipmi"), "protocol", dStr("lanplus"),
			"cipherSuite", dInt("3"), "privilege", dStr("administrator")),
		"pxe", dMap("persistent", dBool("false")),
	))
	bootActionDefaults = specDefaults(dMap("signaling", dBool("true")))
	imageDefaults      = specDefaults(dMap("architecture", dStr(DefaultImageArch)))
)

// nodeDefaults is the root every host profile chain starts from: the Site's
// defaults.platform.
func nodeDefaults(siteSpec *Value) *Value {
	p := siteSpec.Get("defaults").Get("platform")
	if p == nil || p.Kind != MapValue {
		return nil
	}
	return specDefaults(dMap("platform", p))
}
