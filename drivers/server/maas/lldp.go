package maas

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// The lldp XML of a machine's commissioning details: lldpd's own format
// (lldpctl -f xml), one <interface name=...> per local port that heard a
// neighbour, its <chassis> (id, name) and <port> (id, descr).

const (
	maxLLDPBytes = 4 << 20
	maxLLDPPorts = 1024
)

type lldpValue struct {
	Type  string `xml:"type,attr"`
	Value string `xml:",chardata"`
}

type lldpDoc struct {
	XMLName    xml.Name        `xml:"lldp"`
	Interfaces []lldpInterface `xml:"interface"`
}

// lldpInterface is a local interface and what it heard.
type lldpInterface struct {
	Name    string `xml:"name,attr"`
	Chassis []struct {
		ID   []lldpValue `xml:"id"`
		Name []lldpValue `xml:"name"`
	} `xml:"chassis"`
	Port []struct {
		ID    []lldpValue `xml:"id"`
		Descr []lldpValue `xml:"descr"`
	} `xml:"port"`
}

// parseLLDP answers each local interface's neighbour, by the interface's
// kernel name. An interface that heard several neighbours keeps the first;
// one without a switch name or port is left out.
func parseLLDP(doc []byte) (map[string]drivers.Neighbor, error) {
	out := map[string]drivers.Neighbor{}
	if len(doc) > maxLLDPBytes {
		return nil, fmt.Errorf("lldp document of %d bytes is larger than %d", len(doc), maxLLDPBytes)
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return out, nil
	}
	var d lldpDoc
	if err := xml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("parse lldp: %w", err)
	}
	if len(d.Interfaces) > maxLLDPPorts {
		return nil, fmt.Errorf("lldp document has %d interfaces, more than %d", len(d.Interfaces), maxLLDPPorts)
	}
	for _, in := range d.Interfaces {
		name := strings.TrimSpace(in.Name)
		if _, dup := out[name]; dup || name == "" {
			continue
		}
		if nb := in.neighbor(); nb.Switch != "" && nb.Port != "" {
			out[name] = nb
		}
	}
	return out, nil
}

func first(vs []lldpValue) string {
	for _, v := range vs {
		if s := strings.TrimSpace(v.Value); s != "" {
			return s
		}
	}
	return ""
}

// neighbor is the first neighbour the interface heard: the chassis name
// (else its ID) as the switch, and the port ID, or the port description
// where the ID is a MAC or absent.
func (in lldpInterface) neighbor() drivers.Neighbor {
	var nb drivers.Neighbor
	if len(in.Chassis) > 0 {
		c := in.Chassis[0]
		nb.Switch = first(c.Name)
		if len(c.ID) > 0 {
			nb.ChassisID = strings.TrimSpace(c.ID[0].Value)
			if c.ID[0].Type == "mac" {
				nb.ChassisID = strings.ToLower(nb.ChassisID)
			}
		}
	}
	if len(in.Port) > 0 {
		p := in.Port[0]
		id, descr := "", first(p.Descr)
		idType := ""
		if len(p.ID) > 0 {
			id, idType = strings.TrimSpace(p.ID[0].Value), p.ID[0].Type
		}
		// A port ID that is a MAC (or absent) says less than the
		// description, which switches set to the port's name.
		nb.Port = id
		if (idType == "mac" || id == "") && descr != "" {
			nb.Port = descr
		}
	}
	if nb.Switch == "" {
		nb.Switch = nb.ChassisID
	}
	return nb
}
