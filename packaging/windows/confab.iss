; Inno Setup 6 script for the Confab installer: per-user or machine-wide install, a Start-menu
; entry, an optional desktop icon and an uninstaller (Settings > Apps, or the Start-menu entry).
;   ISCC.exe /DAppVersion=0.1.0 packaging\windows\confab.iss
; build_windows.ps1 runs PyInstaller first (build\dist\confab) and passes the version from
; pyproject.toml. Paths below are relative to the repository root (SourceDir).
; The user's conversations live in %APPDATA%\Confab and are kept on uninstall.

#define AppName "Confab"
#define AppExe "confab.exe"
#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif

[Setup]
AppId={{C2EA9863-2F01-4278-BFA8-F4A7F3C2DE78}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Confab developers
SourceDir=..\..
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=build
OutputBaseFilename=Confab-{#AppVersion}-setup
SetupIconFile=resources\icons\confab.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "build\dist\confab\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{group}\{cm:UninstallProgram,{#AppName}}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
