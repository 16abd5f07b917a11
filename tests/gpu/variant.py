# SPDX-License-Identifier: Apache-2.0
# rdmak's file for this machine's two GPUs, moved under a synthetic PCIe switch (x8 link) beside
# a ConnectX-7 NIC that this machine does not have: what NCCL keeps of each shows in its dump.
import re, sys
xml = open(sys.argv[1]).read()
gpus = re.findall(r'( *<pci busid="[^"]+" class="0x0302[^"]*"[^\n]*/>\n)', xml)
body = "".join("  " + g for g in gpus)
for g in gpus:
    xml = xml.replace(g, "", 1)
sw = ('    <pci busid="0000:fe:00.0" class="0x060400" vendor="0x1000" device="0xc030" '
      'subsystem_vendor="0x1000" subsystem_device="0x100b" link_speed="32.0 GT/s PCIe" link_width="8">\n'
      + body +
      '      <pci busid="0000:fe:01.0" class="0x020700" vendor="0x15b3" device="0x1021" '
      'subsystem_vendor="0x15b3" subsystem_device="0x0041" link_speed="32.0 GT/s PCIe" link_width="16">\n'
      '        <nic>\n'
      '          <net name="mlx5_0" dev="0" speed="400000" port="1" guid="0x106a450003c288a0" gdr="1"/>\n'
      '        </nic>\n'
      '      </pci>\n'
      '    </pci>\n')
xml = re.sub(r'(  <cpu [^\n]*>\n)', lambda m: m.group(1) + sw, xml, count=1)
sys.stdout.write(xml)
