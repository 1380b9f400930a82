package wire

import (
	"fmt"
	"reflect"
)

// RoundTrip is the property every codec's fuzz target checks: whatever
// Unmarshal accepts, Marshal can encode and Unmarshal decodes back to the
// same message. It returns nil when p does not decode at all.
func RoundTrip[M any](c Codec[M], typ uint8, p []byte) error {
	m, err := c.Unmarshal(typ, p)
	if err != nil {
		return nil
	}
	typ2, p2, err := c.Marshal(m)
	if err != nil {
		return fmt.Errorf("decoded %+v but cannot encode it: %v", m, err)
	}
	m2, err := c.Unmarshal(typ2, p2)
	if err != nil || !reflect.DeepEqual(m, m2) {
		return fmt.Errorf("round trip changed %+v into %+v (%v)", m, m2, err)
	}
	return nil
}
